// The CPU's fused, per-sample Conv2d (ops::Conv2d / Conv2dBackward on
// Backend::Conv2d) against ComposedConv2d, the whole-batch im2col + GEMM
// composition the CUDA backend runs: forward and every subset of backward
// gradients, with stride, padding and dilation, with and without a bias,
// f32 and f64, a strided (transposed) input, and a batch smaller than the
// thread count (one slab, GEMMs split across threads) and larger (one slab
// per thread); f32 patches of up to 12 taps take small_patch_products.h.
#include <cmath>
#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/conv2d_composite.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/window_ops.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using testing::ToDoubles;

struct ConvCase {
  Window2dGeometry window;
  Shape input;  // [N, C, H, W]
  int64_t out_channels;
  bool bias;
  DType dtype;
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << "kernel " << c.window.kernel[0] << "x" << c.window.kernel[1]
      << " stride " << c.window.stride[0] << "x" << c.window.stride[1]
      << " pad " << c.window.padding[0] << "x" << c.window.padding[1]
      << " dilation " << c.window.dilation[0] << "x" << c.window.dilation[1]
      << " input " << c.input.ToString() << " out " << c.out_channels
      << (c.bias ? " bias " : " ") << DTypeName(c.dtype);
}

class Conv2dKernelTest : public ::testing::TestWithParam<ConvCase> {
 protected:
  TensorBase Random(const Shape& shape) {
    return ops::RandomNormal(shape, GetParam().dtype, Device::Cpu(), generator_,
                             0, 1);
  }
  Shape WeightShape() const {
    const ConvCase& c = GetParam();
    return Shape{c.out_channels, c.input[1], c.window.kernel[0],
                 c.window.kernel[1]};
  }
  Shape OutputShape() const {
    const ConvCase& c = GetParam();
    return Shape{c.input[0], c.out_channels,
                 ops::Window2dOutputSize(c.window, 0, c.input[2]),
                 ops::Window2dOutputSize(c.window, 1, c.input[3])};
  }
  // Tolerance: the two paths sum in different orders.
  double Tolerance() const {
    return GetParam().dtype == DType::kF64 ? 1e-12 : 2e-5;
  }
  void ExpectClose(const TensorBase& want, const TensorBase& got,
                   const char* what) {
    ASSERT_EQ(want.shape(), got.shape()) << what;
    const std::vector<double> a = ToDoubles(want), b = ToDoubles(got);
    double scale = 1;
    for (double x : a) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], Tolerance() * scale) << what << " element " << i;
    }
  }
  PhiloxGenerator generator_{21};
};

TEST_P(Conv2dKernelTest, ForwardMatchesComposedConvolution) {
  const ConvCase& c = GetParam();
  const TensorBase input = Random(c.input);
  const TensorBase weight = Random(WeightShape());
  const TensorBase bias = c.bias ? Random(Shape{c.out_channels}) : TensorBase();
  const TensorBase want =
      TensorBase::Empty(OutputShape(), c.dtype, Device::Cpu());
  ComposedConv2d(GetBackend(Device::Cpu()), want, input, weight, bias,
                 c.window);
  ExpectClose(want, ops::Conv2d(input, weight, bias, c.window), "output");
}

TEST_P(Conv2dKernelTest, ForwardReadsATransposedInput) {
  const ConvCase& c = GetParam();
  // The same values, stored [N, C, W, H] and viewed as [N, C, H, W].
  const TensorBase stored =
      Random(Shape{c.input[0], c.input[1], c.input[3], c.input[2]});
  const TensorBase input = stored.Transpose(2, 3);
  const TensorBase weight = Random(WeightShape());
  const TensorBase want =
      ops::Conv2d(input.Contiguous(), weight, TensorBase(), c.window);
  ExpectClose(want, ops::Conv2d(input, weight, TensorBase(), c.window),
              "output");
}

TEST_P(Conv2dKernelTest, BackwardMatchesComposedConvolution) {
  const ConvCase& c = GetParam();
  const TensorBase input = Random(c.input);
  const TensorBase weight = Random(WeightShape());
  const TensorBase grad = Random(OutputShape());
  const TensorBase input_grad =
      TensorBase::Empty(c.input, c.dtype, Device::Cpu());
  const TensorBase weight_grad =
      TensorBase::Empty(WeightShape(), c.dtype, Device::Cpu());
  const TensorBase bias_grad =
      TensorBase::Empty(Shape{c.out_channels}, c.dtype, Device::Cpu());
  ComposedConv2dBackward(GetBackend(Device::Cpu()), input_grad, weight_grad,
                         bias_grad, grad, input, weight, c.window);
  // Every subset of the three gradients the layer may ask for.
  for (const bool want_input : {true, false}) {
    for (const bool want_weight : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "input grad " << want_input
                                        << ", weight grad " << want_weight);
      const ops::Conv2dGradients grads =
          ops::Conv2dBackward(grad, want_weight ? input : TensorBase(),
                              want_input ? weight : TensorBase(), c.input,
                              WeightShape(), c.window, c.bias);
      EXPECT_EQ(want_input, grads.input.defined());
      EXPECT_EQ(want_weight, grads.weight.defined());
      EXPECT_EQ(c.bias, grads.bias.defined());
      if (want_input) ExpectClose(input_grad, grads.input, "input grad");
      if (want_weight) ExpectClose(weight_grad, grads.weight, "weight grad");
      if (c.bias) ExpectClose(bias_grad, grads.bias, "bias grad");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, Conv2dKernelTest,
    ::testing::Values(
        // The example CNN's layers, a batch larger than the thread count.
        ConvCase{{{3, 3}, {1, 1}, {1, 1}, {1, 1}},
                 {5, 1, 28, 28},
                 8,
                 true,
                 DType::kF32},
        ConvCase{{{3, 3}, {1, 1}, {1, 1}, {1, 1}},
                 {4, 6, 14, 14},
                 10,
                 true,
                 DType::kF32},
        // One sample: a single slab whose GEMMs are split across threads.
        ConvCase{{{3, 3}, {1, 1}, {1, 1}, {1, 1}},
                 {1, 6, 14, 14},
                 40,
                 true,
                 DType::kF32},
        // Small f32 patches (small_patch_products.h): one channel strided
        // and dilated (positions 4 x 5, a tail of 4 lanes); 3 x 4 (12 taps,
        // the most) over 117 positions (14 vectors and 5 lanes); 2 channels
        // of 2 x 3 (12 taps) without a bias; 2 x 2 on one channel, one
        // sample. (13 taps: 1 channel of 1 x 13, the GEMM again.)
        ConvCase{{{3, 3}, {2, 2}, {1, 2}, {2, 1}},
                 {3, 1, 9, 8},
                 5,
                 true,
                 DType::kF32},
        ConvCase{{{3, 4}, {1, 1}, {1, 2}, {1, 1}},
                 {3, 1, 9, 12},
                 3,
                 true,
                 DType::kF32},
        ConvCase{{{2, 3}, {1, 1}, {1, 1}, {1, 1}},
                 {4, 2, 11, 10},
                 6,
                 false,
                 DType::kF32},
        ConvCase{{{2, 2}, {1, 1}, {0, 0}, {1, 1}},
                 {1, 1, 6, 7},
                 17,
                 true,
                 DType::kF32},
        ConvCase{{{1, 13}, {1, 1}, {0, 6}, {1, 1}},
                 {2, 1, 5, 9},
                 4,
                 true,
                 DType::kF32},
        ConvCase{{{3, 2}, {2, 1}, {1, 0}, {1, 1}},
                 {3, 2, 7, 5},
                 3,
                 false,
                 DType::kF64},
        ConvCase{{{3, 3}, {2, 3}, {2, 1}, {2, 2}},
                 {2, 2, 9, 10},
                 4,
                 true,
                 DType::kF64},
        ConvCase{{{1, 1}, {1, 1}, {0, 0}, {1, 1}},
                 {3, 4, 3, 3},
                 2,
                 true,
                 DType::kF64},
        ConvCase{{{5, 5}, {1, 1}, {0, 0}, {1, 1}},
                 {2, 3, 5, 5},
                 2,
                 true,
                 DType::kF64}));

TEST(Conv2dKernelTest, GradientsMatchFiniteDifferences) {
  Generator generator(3);
  const Window2dGeometry window{{3, 3}, {2, 1}, {1, 1}, {1, 2}};
  const std::vector<TensorBase> inputs = {
      testing::RandomLeaf({3, 2, 6, 7}, generator, -1, 1),
      testing::RandomLeaf({4, 2, 3, 3}, generator, -1, 1),
      testing::RandomLeaf({4}, generator, -1, 1)};
  EXPECT_TRUE(testing::Gradcheck(
      [&](std::span<const TensorBase> x) {
        // ops::Conv2d records no node: this one routes the gradient through
        // ops::Conv2dBackward, as nn::Conv2d does.
        const TensorBase input = x[0], weight = x[1];
        return autodiff::Record("conv2d", {input, weight, x[2]},
                                ops::Conv2d(input, weight, x[2], window),
                                [=](const TensorBase& grad) -> GradList {
                                  ops::Conv2dGradients g = ops::Conv2dBackward(
                                      grad, input, weight, input.shape(),
                                      weight.shape(), window, true);
                                  return {g.input, g.weight, g.bias};
                                });
      },
      inputs));
}

TEST(Conv2dKernelTest, EmptyBatchGivesZeroWeightAndBiasGradients) {
  const Window2dGeometry window{{3, 3}, {1, 1}, {1, 1}, {1, 1}};
  const TensorBase input =
      TensorBase::Empty(Shape{0, 2, 5, 5}, DType::kF32, Device::Cpu());
  const TensorBase weight =
      ops::Full(Shape{3, 2, 3, 3}, 1.0, DType::kF32, Device::Cpu());
  const TensorBase out = ops::Conv2d(input, weight, TensorBase(), window);
  EXPECT_EQ((Shape{0, 3, 5, 5}), out.shape());
  const ops::Conv2dGradients grads = ops::Conv2dBackward(
      out, input, weight, input.shape(), weight.shape(), window, true);
  EXPECT_EQ(std::vector<double>(54, 0.0), ToDoubles(grads.weight));
  EXPECT_EQ(std::vector<double>(3, 0.0), ToDoubles(grads.bias));
}

TEST(Conv2dKernelDeathTest, MismatchedWeightIsNamed) {
  const Window2dGeometry window{{3, 3}, {1, 1}, {1, 1}, {1, 1}};
  const TensorBase input =
      TensorBase::Empty(Shape{1, 2, 5, 5}, DType::kF32, Device::Cpu());
  const TensorBase weight =
      TensorBase::Empty(Shape{3, 4, 3, 3}, DType::kF32, Device::Cpu());
  EXPECT_DEATH(ops::Conv2d(input, weight, TensorBase(), window),
               "conv2d: weight \\[3, 4, 3, 3\\] does not fit input "
               "\\[1, 2, 5, 5\\]");
}

}  // namespace
}  // namespace kindling
