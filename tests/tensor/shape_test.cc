#include "kindling/tensor/shape.h"

#include "gtest/gtest.h"

namespace kindling {
namespace {

TEST(ShapeTest, RankDimsAndElementCount) {
  const Shape shape{2, 3, 4};
  EXPECT_EQ(3, shape.rank());
  EXPECT_EQ(3, shape[1]);
  EXPECT_EQ(24, shape.num_elements());
}

TEST(ShapeTest, ScalarHasRankZeroAndOneElement) {
  const Shape scalar;
  EXPECT_EQ(0, scalar.rank());
  EXPECT_EQ(1, scalar.num_elements());
  EXPECT_EQ("[]", scalar.ToString());
}

TEST(ShapeTest, PrintsBracketedList) {
  EXPECT_EQ("[2, 3]", (Shape{2, 3}).ToString());
}

TEST(ShapeTest, ContiguousStridesAreRowMajor) {
  EXPECT_EQ((Shape{12, 4, 1}), ContiguousStrides(Shape{2, 3, 4}));
}

TEST(ShapeTest, BroadcastAlignsAtTheRightAndStretchesOnes) {
  Shape result;
  ASSERT_TRUE(BroadcastShapes(Shape{4, 1, 3}, Shape{5, 1}, &result));
  EXPECT_EQ((Shape{4, 5, 3}), result);
  ASSERT_TRUE(BroadcastShapes(Shape{}, Shape{2, 2}, &result));
  EXPECT_EQ((Shape{2, 2}), result);
  ASSERT_TRUE(BroadcastShapes(Shape{0, 1}, Shape{1, 3}, &result));
  EXPECT_EQ((Shape{0, 3}), result);
}

TEST(ShapeTest, BroadcastRejectsMismatchedDims) {
  Shape result;
  EXPECT_FALSE(BroadcastShapes(Shape{2, 3}, Shape{4}, &result));
}

TEST(ShapeTest, ZeroDimensionMakesAnEmptyShapeEvenWithHugeDims) {
  EXPECT_EQ(0, (Shape{int64_t{1} << 62, 4, 0}).num_elements());
}

}  // namespace
}  // namespace kindling
