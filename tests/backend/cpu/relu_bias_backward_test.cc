// Backend::ReluBiasBackward on the CPU (backend/cpu/relu_bias_backward.cc):
// the one pass gives the composed ops' values bit for bit (Binary
// kReluBackward, then SumToShape's column sums), on widths with and without
// a partial column block or vector, row counts across the sums' 64-row
// blocks, columns split over threads, and outputs of -0, +0, NaN and
// infinities; it declines, writing nothing, what it has no kernel for; and
// matmul_bias_relu's gradients through Backward() are the same as before.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/tensor_functions.h"
#include "tests/support/cpu_tensors.h"

namespace kindling {
namespace {

using test_support::ExpectSameBits;
using test_support::FromFloats;
using test_support::RandomFloats;

struct ReluBiasGrads {
  TensorBase product;
  TensorBase bias;
};

// The ops matmul_bias_relu's backward runs where no backend kernel takes
// the operands.
ReluBiasGrads Composed(const TensorBase& grad, const TensorBase& out) {
  const TensorBase product = ops::Binary(BinaryOp::kReluBackward, grad, out);
  return {product, autodiff::SumToShape(product, Shape{grad.shape()[1]})};
}

// Fused() runs the backend's kernel into *result; false where it declines.
bool Fused(const TensorBase& grad, const TensorBase& out,
           ReluBiasGrads* result) {
  result->product = TensorBase::Empty(grad.shape(), DType::kF32, Device::Cpu());
  result->bias =
      TensorBase::Empty(Shape{grad.shape()[1]}, DType::kF32, Device::Cpu());
  return GetBackend(Device::Cpu())
      .ReluBiasBackward(result->product, result->bias, grad, out);
}

// An output of relu(x) for N(0, 1) x, with some cells replaced by values
// whose masking must match element_math::ReluBackward: -0, +0, NaN, +inf,
// -inf, a denormal.
TensorBase Output(int64_t rows, int64_t columns, uint32_t seed) {
  std::vector<float> values = RandomFloats(rows * columns, seed);
  const float specials[] = {-0.0f,
                            0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min()};
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0) values[i] = 0;
    if (i % 13 == 5) values[i] = specials[(i / 13) % 6];
  }
  return FromFloats(values, Shape{rows, columns});
}

TEST(ReluBiasBackwardTest, SameBitsAsTheComposedOps) {
  struct Case {
    int64_t rows;
    int64_t columns;
  };
  // Widths below, at and past a vector (8) and a column block (32), up to
  // the kernel's widest (256); rows below, at and past the sums' 64-row
  // blocks; 128 x 256 (the MLP's hidden layer) and 256 x 250 are split over
  // threads.
  const std::vector<Case> cases = {{1, 2},     {3, 7},    {64, 8},   {65, 33},
                                   {127, 31},  {128, 32}, {129, 40}, {5, 100},
                                   {128, 256}, {256, 250}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const std::string what = "rows " + std::to_string(c.rows) + " columns " +
                             std::to_string(c.columns);
    std::vector<float> grad_values = RandomFloats(c.rows * c.columns, seed++);
    // A NaN and an infinity in the incoming gradient too.
    grad_values[0] = std::numeric_limits<float>::quiet_NaN();
    grad_values.back() = std::numeric_limits<float>::infinity();
    const TensorBase grad = FromFloats(grad_values, Shape{c.rows, c.columns});
    const TensorBase out = Output(c.rows, c.columns, seed++);
    ReluBiasGrads fused;
    ASSERT_TRUE(Fused(grad, out, &fused)) << what;
    const ReluBiasGrads expected = Composed(grad, out);
    ExpectSameBits(fused.product, expected.product, what + " product");
    ExpectSameBits(fused.bias, expected.bias, what + " bias");
  }
}

TEST(ReluBiasBackwardTest, DeclinesWhatItHasNoKernelFor) {
  const TensorBase grad = FromFloats(RandomFloats(24, 3), Shape{4, 6});
  const TensorBase out = Output(4, 6, 4);
  Backend& backend = GetBackend(Device::Cpu());
  const auto f32 = [](const Shape& shape) {
    return TensorBase::Empty(shape, DType::kF32, Device::Cpu());
  };
  // f64.
  EXPECT_FALSE(backend.ReluBiasBackward(
      TensorBase::Empty(Shape{4, 6}, DType::kF64, Device::Cpu()),
      TensorBase::Empty(Shape{6}, DType::kF64, Device::Cpu()),
      grad.To(DType::kF64), out.To(DType::kF64)));
  // One column (Reduce sums it as a row, in another order).
  EXPECT_FALSE(backend.ReluBiasBackward(f32(Shape{4, 1}), f32(Shape{1}),
                                        grad.Slice(1, 0, 1, 1).Contiguous(),
                                        out.Slice(1, 0, 1, 1).Contiguous()));
  // Rank 3 (SumToShape sums it over two axes, one at a time).
  EXPECT_FALSE(backend.ReluBiasBackward(f32(Shape{2, 2, 6}), f32(Shape{6}),
                                        grad.Reshape(Shape{2, 2, 6}),
                                        out.Reshape(Shape{2, 2, 6})));
  // Rows wider than 256, or more than 64 Ki elements (there the composed
  // ops measured as fast or faster).
  EXPECT_FALSE(backend.ReluBiasBackward(
      f32(Shape{2, 257}), f32(Shape{257}),
      FromFloats(RandomFloats(514, 6), Shape{2, 257}), Output(2, 257, 7)));
  EXPECT_FALSE(backend.ReluBiasBackward(
      f32(Shape{257, 256}), f32(Shape{256}),
      FromFloats(RandomFloats(257 * 256, 8), Shape{257, 256}),
      Output(257, 256, 9)));
  // Shapes that disagree.
  EXPECT_FALSE(
      backend.ReluBiasBackward(f32(Shape{4, 6}), f32(Shape{5}), grad, out));
  // A transposed (non-contiguous) gradient; the outputs are left as they
  // were.
  const std::vector<float> sentinel(24, 42.0f);
  const TensorBase product = FromFloats(sentinel, Shape{4, 6});
  const TensorBase bias = FromFloats(std::vector<float>(6, 42.0f), Shape{6});
  const TensorBase grad_t =
      FromFloats(RandomFloats(24, 5), Shape{6, 4}).Transpose(0, 1);
  EXPECT_FALSE(backend.ReluBiasBackward(product, bias, grad_t, out));
  for (float v : test_support::Values<float>(product)) EXPECT_EQ(v, 42.0f);
  for (float v : test_support::Values<float>(bias)) EXPECT_EQ(v, 42.0f);
}

// matmul_bias_relu's gradients at its input, weight and bias through
// Backward() against the ops its backward ran before the kernel: the mask,
// the two products and SumToShape.
TEST(ReluBiasBackwardTest, MatmulBiasReluGradientsThroughBackward) {
  const TensorBase x = FromFloats(RandomFloats(128 * 48, 11), Shape{128, 48})
                           .set_require_grad(true);
  const TensorBase w = FromFloats(RandomFloats(48 * 40, 12), Shape{48, 40})
                           .set_require_grad(true);
  const TensorBase b =
      FromFloats(RandomFloats(40, 13), Shape{40}).set_require_grad(true);
  const TensorBase upstream =
      FromFloats(RandomFloats(128 * 40, 14), Shape{128, 40});
  const Tensor<2> y =
      matmul_bias_relu(Tensor<2>(x), Tensor<2>(w), Tensor<1>(b));
  BackwardOptions options;
  options.grad_output = upstream;
  const Gradients grads = Backward(y, options);

  const ReluBiasGrads expected = Composed(upstream, y.base().Detach());
  ExpectSameBits(*grads.Get(b.leaf_id()), expected.bias, "bias");
  ExpectSameBits(*grads.Get(x.leaf_id()),
                 ops::Matmul(expected.product, w.Detach().Transpose(0, 1)),
                 "input");
  ExpectSameBits(*grads.Get(w.leaf_id()),
                 ops::Matmul(x.Detach().Transpose(0, 1), expected.product),
                 "weight");
}

}  // namespace
}  // namespace kindling
