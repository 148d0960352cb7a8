// The strided loop skeleton: dimension merging and segment coverage, with
// serial and parallel sizes.
#include "kindling/backend/cpu/strided.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling::cpu {
namespace {

TEST(StridedLayoutTest, ContiguousTensorBecomesOneRow) {
  const auto t = Tensor<3>::Zeros({4, 5, 6});
  const auto layout = MakeLayout<1>({&t.base()});
  EXPECT_EQ(1, layout.rank);
  EXPECT_EQ(120, layout.shape[0]);
  EXPECT_EQ(4, layout.strides[0][0]);
}

TEST(StridedLayoutTest, TransposedTensorKeepsTwoLoops) {
  const auto t = Tensor<2>::Zeros({4, 6}).t();
  const auto out = Tensor<2>::Zeros({6, 4});
  const auto layout = MakeLayout<2>({&out.base(), &t.base()});
  EXPECT_EQ(2, layout.rank);
  EXPECT_EQ(6, layout.shape[0]);
  EXPECT_EQ(4, layout.shape[1]);
  EXPECT_EQ(4, layout.strides[1][0]);  // bytes
  EXPECT_EQ(24, layout.strides[1][1]);
}

TEST(StridedLayoutTest, SizeOneDimsAreDroppedAndScalarsHaveRankOne) {
  const auto t = Tensor<4>::Zeros({1, 3, 1, 2});
  EXPECT_EQ(1, MakeLayout<1>({&t.base()}).rank);
  const auto s = Tensor<0>::Zeros({});
  const auto layout = MakeLayout<1>({&s.base()});
  EXPECT_EQ(1, layout.rank);
  EXPECT_EQ(1, layout.shape[0]);
}

// Every element is visited exactly once, whatever the split.
void ExpectVisitsEachElementOnce(const Shape& shape, const Shape& strides_of,
                                 int64_t grain) {
  auto t = Tensor<3>::Zeros(strides_of);
  const auto view = t.permute({2, 0, 1});  // non-contiguous order
  ASSERT_EQ(shape, view.shape());
  const auto layout = MakeLayout<1>({&view.base()});
  ForEachSegment(layout, grain,
                 [](char* const* data, const int64_t* stride, int64_t count) {
                   for (int64_t i = 0; i < count; ++i) {
                     *reinterpret_cast<float*>(data[0] + i * stride[0]) += 1;
                   }
                 });
  for (float v : t.to_data<float>()) ASSERT_EQ(1.0f, v);
}

TEST(ForEachSegmentTest, SerialCoversEveryElement) {
  ExpectVisitsEachElementOnce(Shape{7, 3, 5}, Shape{3, 5, 7}, kElementGrain);
}

TEST(ForEachSegmentTest, ParallelSplitsMidRowAndCoversEveryElement) {
  // grain 1 forces a split at arbitrary positions, including inside rows.
  ExpectVisitsEachElementOnce(Shape{7, 3, 5}, Shape{3, 5, 7}, 1);
  ExpectVisitsEachElementOnce(Shape{33, 65, 17}, Shape{65, 17, 33}, 1000);
}

}  // namespace
}  // namespace kindling::cpu
