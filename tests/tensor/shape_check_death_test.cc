// Programming errors abort with a message naming the op and the shapes.
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(ShapeCheckDeathTest, BroadcastMismatchNamesOpAndShapes) {
  const auto a = Tensor<2>::Zeros({2, 3});
  const auto b = Tensor<2>::Zeros({4, 5});
  EXPECT_DEATH(add(a, b),
               "add: shapes \\[2, 3\\] and \\[4, 5\\] cannot be broadcast");
  EXPECT_DEATH(mul(a, b), "mul: shapes \\[2, 3\\] and \\[4, 5\\]");
  EXPECT_DEATH(less(a, b), "less: shapes \\[2, 3\\] and \\[4, 5\\]");
}

TEST(ShapeCheckDeathTest, MatmulInnerDimensionMismatch) {
  const auto a = Tensor<2>::Zeros({2, 3});
  const auto b = Tensor<2>::Zeros({4, 5});
  EXPECT_DEATH(
      matmul(a, b),
      "matmul: inner dimensions differ, shapes \\[2, 3\\] and \\[4, 5\\]");
}

TEST(ShapeCheckDeathTest, MatmulBiasNamesWeightAndBias) {
  const auto x = Tensor<2>::Zeros({2, 3});
  const auto w = Tensor<2>::Zeros({3, 4});
  EXPECT_DEATH(matmul_bias(x, w, Tensor<1>::Zeros({3})),
               "matmul_bias: weight \\[3, 4\\] and bias \\[3\\] \\(want "
               "\\[K, N\\] and \\[N\\]\\)");
  EXPECT_DEATH(matmul_bias(x, w, Tensor<1>::Zeros({4}).to(DType::kF64)),
               "matmul_bias: dtypes differ, input f32\\[2, 3\\] vs bias "
               "f64\\[4\\]");
  EXPECT_DEATH(matmul_bias(x, Tensor<2>::Zeros({2, 4}), Tensor<1>::Zeros({4})),
               "matmul: inner dimensions differ");
}

TEST(ShapeCheckDeathTest, ReshapeWithWrongElementCount) {
  const auto a = Tensor<2>::Zeros({2, 3});
  EXPECT_DEATH(
      a.reshape<2>({4, 2}),
      "reshape: shape \\[4, 2\\] has 8 elements, input shape \\[2, 3\\]");
}

TEST(ShapeCheckDeathTest, RankMismatchAtConstruction) {
  EXPECT_DEATH(Tensor<2>::Zeros({2, 3, 4}),
               "full: shape \\[2, 3, 4\\] given for a rank-2");
  EXPECT_DEATH(Tensor<2>::FromData<float>({1, 2, 3}, {2, 2}),
               "from_data: 3 elements for shape \\[2, 2\\]");
}

TEST(ShapeCheckDeathTest, AxisOutOfRange) {
  const auto a = Tensor<2>::Zeros({2, 3});
  EXPECT_DEATH(a.sum_dim(2), "sum: axis 2 out of range for shape \\[2, 3\\]");
  EXPECT_DEATH(a.narrow(1, 2, 2), "narrow: range \\[2, 4\\) out of bounds");
}

TEST(ShapeCheckDeathTest, DTypeMismatchInBinaryOp) {
  const auto a = Tensor<1>::Zeros({2});
  const auto b = Tensor<1>::Zeros({2}, Device::Cpu(), DType::kF64);
  EXPECT_DEATH(add(a, b), "add: dtypes differ, f32\\[2\\] vs f64\\[2\\]");
}

TEST(ShapeCheckDeathTest, CatShapesDiffer) {
  const auto a = Tensor<2>::Zeros({2, 3});
  const auto b = Tensor<2>::Zeros({2, 4});
  EXPECT_DEATH(cat(std::vector<Tensor<2>>{a, b}, 0),
               "cat: shapes \\[2, 3\\] and \\[2, 4\\] differ outside axis 0");
}

TEST(ShapeCheckDeathTest, IndexOutOfRange) {
  const auto table = Tensor<2>::Zeros({4, 2});
  const auto ids = Tensor<1, Int>::FromData<int64_t>({1, 4}, {2});
  EXPECT_DEATH(index_select(table, 0, ids),
               "index_select: index 4 out of range \\[0, 4\\) \\(entry 1 "
               "of index \\[2\\]\\)");
}

TEST(ShapeCheckDeathTest, NegativeIndexNamesItsEntry) {
  const auto table = Tensor<2>::Zeros({4, 2});
  const auto ids =
      Tensor<2, Int>::FromData<int32_t>({0, 1, 2, 0, -1, 0}, {3, 2});
  EXPECT_DEATH(gather(table.narrow(0, 0, 3), 0, ids),
               "gather: index -1 out of range \\[0, 3\\) \\(entry 4 of "
               "index \\[3, 2\\]\\)");
}

TEST(ShapeCheckDeathTest, InPlaceShapeMustNotGrow) {
  auto a = Tensor<1>::Zeros({3});
  const auto b = Tensor<2>::Zeros({2, 3});
  EXPECT_DEATH(a.add_(b),
               "add_: shape \\[2, 3\\] does not broadcast to \\[3\\]");
}

TEST(ShapeCheckDeathTest, UndefinedTensor) {
  const Tensor<1> undefined;
  EXPECT_DEATH(undefined.exp(), "exp: undefined tensor");
}

TEST(ShapeCheckDeathTest, ElementCountOverflowAbortsInsteadOfWrapping) {
  // 2^62 + 1 rows of 4 would wrap to 4 elements and pass a wrapped bounds
  // check; it must abort before allocating.
  EXPECT_DEATH(Tensor<2>::Zeros({(int64_t{1} << 62) + 1, 4}),
               "more elements than fit in 64 bits");
}

TEST(ShapeCheckDeathTest, ByteCountOverflowAborts) {
  EXPECT_DEATH(Tensor<1>::Zeros({int64_t{1} << 62}),
               "needs more bytes than fit in 64 bits");
}

TEST(ShapeCheckDeathTest, CudaDeviceWithoutBackend) {
  EXPECT_DEATH(Tensor<1>::Zeros({2}, Device::Cuda(0)),
               "no device memory registered for device cuda:0");
}

}  // namespace
}  // namespace kindling
