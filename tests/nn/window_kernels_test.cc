// The sliding-window kernels (ops::Im2Col, Col2Im, MaxPool2d and its
// backward: Backend::Im2Col .. MaxPool2dBackward) against the composite
// view-and-copy path they replaced (padding by concatenation, one strided
// slice per kernel entry, stacked; col2im by in-place adds into those
// slices), on windows with stride, padding and dilation, strided inputs and
// f32 / f64.
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/nn/patches.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/window_ops.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using testing::ToDoubles;

// --- The reference: the composite path -----------------------------------

TensorBase PadAxis(const TensorBase& input, int axis, int64_t cells,
                   double value) {
  if (cells == 0) return input;
  Shape pad_shape = input.shape();
  pad_shape[axis] = cells;
  const TensorBase pad =
      ops::Full(pad_shape, value, input.dtype(), input.device());
  const std::vector<TensorBase> parts = {pad, input, pad};
  return ops::Cat(parts, axis);
}

// EntryCells() views the cells kernel entry (i, j) reads for every window
// position: a strided [N, C, OH, OW] slice of the padded input.
TensorBase EntryCells(const TensorBase& padded, const Window2dGeometry& w,
                      int64_t i, int64_t j, int64_t out_h, int64_t out_w) {
  const int64_t top = i * w.dilation[0], left = j * w.dilation[1];
  return padded.Slice(2, top, top + (out_h - 1) * w.stride[0] + 1, w.stride[0])
      .Slice(3, left, left + (out_w - 1) * w.stride[1] + 1, w.stride[1]);
}

// ReferencePatches(): [N, C, H, W] -> [N, C, K, OH, OW].
TensorBase ReferencePatches(const TensorBase& input, const Window2dGeometry& w,
                            double pad_value) {
  const Shape& s = input.shape();
  const int64_t out_h = ops::Window2dOutputSize(w, 0, s[2]);
  const int64_t out_w = ops::Window2dOutputSize(w, 1, s[3]);
  const TensorBase padded = PadAxis(PadAxis(input, 2, w.padding[0], pad_value),
                                    3, w.padding[1], pad_value);
  std::vector<TensorBase> entries;
  for (int64_t i = 0; i < w.kernel[0]; ++i) {
    for (int64_t j = 0; j < w.kernel[1]; ++j) {
      entries.push_back(EntryCells(padded, w, i, j, out_h, out_w));
    }
  }
  return ops::Stack(entries, 2);
}

// ReferenceCol2Im(): patches [N, C, K, OH, OW] summed back into [N, C, H, W].
TensorBase ReferenceCol2Im(const TensorBase& patches, const Window2dGeometry& w,
                           const Shape& input) {
  TensorBase padded =
      ops::Full(Shape{input[0], input[1], input[2] + 2 * w.padding[0],
                      input[3] + 2 * w.padding[1]},
                0.0, patches.dtype(), patches.device());
  for (int64_t i = 0; i < w.kernel[0]; ++i) {
    for (int64_t j = 0; j < w.kernel[1]; ++j) {
      TensorBase cells =
          EntryCells(padded, w, i, j, patches.shape()[3], patches.shape()[4]);
      ops::BinaryInPlace(BinaryOp::kAdd, cells,
                         patches.Narrow(2, i * w.kernel[1] + j, 1).Squeeze(2));
    }
  }
  return padded.Narrow(2, w.padding[0], input[2])
      .Narrow(3, w.padding[1], input[3]);
}

// PatchesToColumns(): [N, C, K, OH, OW] -> the [C * K, N * OH * OW] matrix.
TensorBase PatchesToColumns(const TensorBase& patches) {
  const Shape& s = patches.shape();
  const int order[] = {1, 2, 0, 3, 4};
  return patches.Permute(order).Reshape(Shape{s[1] * s[2], s[0] * s[3] * s[4]});
}

void ExpectSameValues(const TensorBase& expected, const TensorBase& actual) {
  ASSERT_EQ(expected.shape(), actual.shape());
  const std::vector<double> want = ToDoubles(expected);
  const std::vector<double> got = ToDoubles(actual);
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;  // also the -infinity padding
    ASSERT_NEAR(want[i], got[i], 1e-5 * (1 + std::abs(want[i])))
        << "element " << i;
  }
}

struct WindowCase {
  Window2dGeometry window;
  Shape input;  // [N, C, H, W]
  DType dtype;
};

void PrintTo(const WindowCase& c, std::ostream* os) {
  *os << "kernel " << c.window.kernel[0] << "x" << c.window.kernel[1]
      << " stride " << c.window.stride[0] << "x" << c.window.stride[1]
      << " pad " << c.window.padding[0] << "x" << c.window.padding[1]
      << " dilation " << c.window.dilation[0] << "x" << c.window.dilation[1]
      << " input " << c.input.ToString() << " " << DTypeName(c.dtype);
}

class WindowKernelTest : public ::testing::TestWithParam<WindowCase> {
 protected:
  TensorBase Random(const Shape& shape) {
    return ops::RandomNormal(shape, GetParam().dtype, Device::Cpu(), generator_,
                             0, 1);
  }
  PhiloxGenerator generator_{7};
};

TEST_P(WindowKernelTest, Im2ColMatchesStridedSlices) {
  const WindowCase& c = GetParam();
  const TensorBase input = Random(c.input);
  for (double pad : {0.0, -std::numeric_limits<double>::infinity()}) {
    ExpectSameValues(PatchesToColumns(ReferencePatches(input, c.window, pad)),
                     ops::Im2Col(input, c.window, pad));
  }
}

TEST_P(WindowKernelTest, Im2ColReadsTransposedInput) {
  const WindowCase& c = GetParam();
  const Shape& s = c.input;
  const TensorBase input =
      Random(Shape{s[0], s[1], s[3], s[2]}).Transpose(2, 3);
  ExpectSameValues(PatchesToColumns(ReferencePatches(input, c.window, 0.0)),
                   ops::Im2Col(input, c.window, 0.0));
}

TEST_P(WindowKernelTest, Col2ImMatchesSliceAdds) {
  const WindowCase& c = GetParam();
  const TensorBase columns = ops::Im2Col(Random(c.input), c.window, 0.0);
  const Shape& s = c.input;
  const int64_t area = c.window.kernel[0] * c.window.kernel[1];
  const int64_t out_h = ops::Window2dOutputSize(c.window, 0, s[2]);
  const int64_t out_w = ops::Window2dOutputSize(c.window, 1, s[3]);
  const TensorBase gradient = Random(columns.shape());
  const int order[] = {2, 0, 1, 3, 4};
  const TensorBase patches =
      gradient.Reshape(Shape{s[1], area, s[0], out_h, out_w}).Permute(order);
  ExpectSameValues(ReferenceCol2Im(patches, c.window, s),
                   ops::Col2Im(gradient, c.window, s));
}

TEST_P(WindowKernelTest, MaxPoolMatchesPatchesMaxAndArgMax) {
  const WindowCase& c = GetParam();
  const TensorBase input = Random(c.input);
  const TensorBase patches = ReferencePatches(
      input, c.window, -std::numeric_limits<double>::infinity());
  const ops::MaxPool2dResult pooled =
      ops::MaxPool2d(input, c.window, /*with_argmax=*/true);
  ExpectSameValues(ops::Reduce(ReduceOp::kMax, patches, 2).Squeeze(2),
                   pooled.output);

  // The backward routes each gradient to the argmax entry of its window:
  // the reference places it in a one-hot patches tensor and sums back.
  const TensorBase grad = Random(pooled.output.shape());
  const TensorBase entry = ops::Reduce(ReduceOp::kArgMax, patches, 2);
  const int64_t area = c.window.kernel[0] * c.window.kernel[1];
  const TensorBase entries =
      ops::Arange(0, static_cast<double>(area), 1, DType::kI64, Device::Cpu())
          .Reshape(Shape{1, 1, area, 1, 1});
  const TensorBase routed = ops::Where(
      ops::Binary(BinaryOp::kEqual, entry, entries), grad.Unsqueeze(2),
      ops::Full(Shape{}, 0.0, grad.dtype(), Device::Cpu()));
  ExpectSameValues(
      ReferenceCol2Im(routed, c.window, c.input),
      ops::MaxPool2dBackward(grad, pooled.argmax, c.input, c.window));
}

TEST_P(WindowKernelTest, MaxPoolReluIsPoolThenRelu) {
  // PoolActivation::kRelu against the two ops in a row: relu of each
  // maximum, argmax -1 where relu_backward passes no gradient, and the
  // backward through that argmax equal to relu_backward then the pool's.
  const WindowCase& c = GetParam();
  const TensorBase input = Random(c.input);
  const ops::MaxPool2dResult plain =
      ops::MaxPool2d(input, c.window, /*with_argmax=*/true);
  const ops::MaxPool2dResult fused = ops::MaxPool2d(
      input, c.window, /*with_argmax=*/true, PoolActivation::kRelu);
  ExpectSameValues(ops::Unary(UnaryOp::kRelu, plain.output), fused.output);
  const TensorBase zero = ops::Full(Shape{}, 0.0, input.dtype(), Device::Cpu());
  const TensorBase no_gradient =
      ops::Full(Shape{}, -1, DType::kI64, Device::Cpu());
  EXPECT_EQ(ToDoubles(ops::Where(
                ops::Binary(BinaryOp::kLessEqual, plain.output, zero),
                no_gradient, plain.argmax)),
            ToDoubles(fused.argmax));
  const TensorBase grad = Random(plain.output.shape());
  ExpectSameValues(
      ops::MaxPool2dBackward(
          ops::Binary(BinaryOp::kReluBackward, grad, plain.output),
          plain.argmax, c.input, c.window),
      ops::MaxPool2dBackward(grad, fused.argmax, c.input, c.window));
  // Without the argmax (inference) the values are the same.
  ExpectSameValues(fused.output,
                   ops::MaxPool2d(input, c.window, /*with_argmax=*/false,
                                  PoolActivation::kRelu)
                       .output);
}

INSTANTIATE_TEST_SUITE_P(
    StridePaddingDilation, WindowKernelTest,
    ::testing::Values(
        WindowCase{{{3, 3}, {1, 1}, {1, 1}, {1, 1}}, {2, 3, 6, 7}, DType::kF32},
        WindowCase{{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, {3, 2, 8, 6}, DType::kF32},
        WindowCase{{{3, 2}, {2, 1}, {1, 0}, {1, 1}}, {2, 2, 7, 5}, DType::kF64},
        WindowCase{
            {{3, 3}, {2, 3}, {2, 1}, {2, 2}}, {1, 2, 9, 10}, DType::kF64},
        WindowCase{{{1, 1}, {1, 1}, {0, 0}, {1, 1}}, {2, 4, 3, 3}, DType::kF32},
        WindowCase{
            {{3, 3}, {1, 1}, {1, 1}, {1, 1}}, {2, 1, 28, 28}, DType::kF32},
        // 2x2 pools at stride 2 over odd planes (a last row and column in
        // no window), both dtypes; a 3x3 window at stride 2 (overlapping
        // windows, as many positions as 2x2 ones) and a 1x1 window at
        // stride 2 (cells no window covers).
        WindowCase{{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, {2, 3, 7, 9}, DType::kF32},
        WindowCase{{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, {2, 2, 5, 5}, DType::kF64},
        // Rows of eight windows and more (the vector backward's rows, with
        // an overlapping last step), odd sizes.
        WindowCase{
            {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, {2, 3, 5, 37}, DType::kF32},
        WindowCase{{{3, 3}, {2, 2}, {1, 1}, {1, 1}}, {2, 3, 8, 8}, DType::kF32},
        WindowCase{{{1, 1}, {2, 2}, {0, 0}, {1, 1}}, {2, 2, 8, 6}, DType::kF32},
        // Disjoint windows the 2x2 rows do not take (each cell routed at
        // most one gradient): padded 3x3 at stride 3, dilated 2x2 at
        // stride 3, and the example CNN's second pool (rows of 7).
        WindowCase{{{3, 3}, {3, 3}, {1, 1}, {1, 1}}, {2, 2, 8, 7}, DType::kF32},
        WindowCase{{{2, 2}, {3, 3}, {0, 0}, {2, 2}}, {1, 2, 9, 8}, DType::kF64},
        WindowCase{
            {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, {2, 4, 14, 14}, DType::kF32}));

TEST(MaxPoolKernelTest, WindowOnlyOnPaddingGivesMinusInfinity) {
  // A 1x1 window with padding 1: the border positions see only padding.
  const TensorBase input =
      ops::Full(Shape{1, 1, 2, 2}, 5.0, DType::kF32, Device::Cpu());
  const ops::MaxPool2dResult pooled =
      ops::MaxPool2d(input, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true);
  const std::vector<double> values = ToDoubles(pooled.output);
  ASSERT_EQ(16u, values.size());
  EXPECT_EQ(-std::numeric_limits<double>::infinity(), values[0]);
  EXPECT_EQ(5.0, values[5]);
  const std::vector<double> grad = ToDoubles(ops::MaxPool2dBackward(
      ops::Full(Shape{1, 1, 4, 4}, 1.0, DType::kF32, Device::Cpu()),
      pooled.argmax, Shape{1, 1, 2, 2}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}));
  EXPECT_EQ((std::vector<double>{1, 1, 1, 1}), grad);
}

TEST(MaxPoolKernelTest, ReluOfAPaddingOnlyWindowIsZeroWithoutGradient) {
  const TensorBase input =
      ops::Full(Shape{1, 1, 2, 2}, 5.0, DType::kF32, Device::Cpu());
  const ops::MaxPool2dResult pooled = ops::MaxPool2d(
      input, {{1, 1}, {1, 1}, {1, 1}, {1, 1}}, true, PoolActivation::kRelu);
  const std::vector<double> values = ToDoubles(pooled.output);
  ASSERT_EQ(16u, values.size());
  EXPECT_EQ(0.0, values[0]);
  EXPECT_EQ(5.0, values[5]);
  EXPECT_EQ(-1.0, ToDoubles(pooled.argmax)[0]);
}

TEST(MaxPoolKernelTest, ReluOfNanIsZeroAndPassesTheGradient) {
  // As relu and relu_backward do: relu(NaN) = 0, and relu_backward passes
  // the gradient wherever the input is not <= 0, NaN included.
  for (const DType dtype : {DType::kF32, DType::kF64}) {
    const TensorBase input =
        ops::Full(Shape{1, 1, 2, 2}, std::numeric_limits<double>::quiet_NaN(),
                  dtype, Device::Cpu());
    const ops::MaxPool2dResult pooled = ops::MaxPool2d(
        input, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, true, PoolActivation::kRelu);
    EXPECT_EQ(std::vector<double>{0}, ToDoubles(pooled.output));
    EXPECT_EQ(std::vector<double>{0}, ToDoubles(pooled.argmax));
  }
}

TEST(MaxPoolKernelTest, TiesGoToTheFirstCell) {
  const TensorBase input =
      ops::Full(Shape{1, 1, 2, 2}, 3.0, DType::kF32, Device::Cpu());
  const ops::MaxPool2dResult pooled =
      ops::MaxPool2d(input, {{2, 2}, {2, 2}, {0, 0}, {1, 1}}, true);
  EXPECT_EQ(std::vector<double>{0}, ToDoubles(pooled.argmax));
}

// --- Window codes: the pooled convolution's compact argmax -----------------

TensorBase Codes(const std::vector<uint8_t>& codes, const Shape& shape) {
  return TensorBase::FromHost(codes.data(), shape, DType::kU8, Device::Cpu());
}

TEST(WindowCodesTest, TurnIntoTheCellsOfTheirWindows) {
  // 2x2 windows at stride 2 over a 4 x 4 plane: 0 1 / 2 3 within each.
  const Window2dGeometry pool{{2, 2}, {2, 2}, {0, 0}, {1, 1}};
  EXPECT_EQ((std::vector<double>{0, 3, 12, -1}),
            ToDoubles(ops::WindowCodesToCells(
                Codes({0, 1, 2, kNoWindowCell}, {1, 1, 2, 2}),
                Shape{1, 1, 4, 4}, pool)));
  // 3x3 windows, stride 2, padding 1, dilation 1 over 5 x 5: code 4 is a
  // window's centre, code 0 its top-left cell (in the padding for window
  // (0, 0), inside it for window (1, 1)).
  const Window2dGeometry padded{{3, 3}, {2, 2}, {1, 1}, {1, 1}};
  std::vector<uint8_t> codes(9, 4);
  codes[4] = 0;
  const std::vector<double> cells = ToDoubles(ops::WindowCodesToCells(
      Codes(codes, {1, 1, 3, 3}), Shape{1, 1, 5, 5}, padded));
  EXPECT_EQ((std::vector<double>{0, 2, 4, 10, 6, 14, 20, 22, 24}), cells);
}

TEST(WindowCodesDeathTest, ACodeOutsideThePlaneAborts) {
  const Window2dGeometry padded{{3, 3}, {2, 2}, {1, 1}, {1, 1}};
  std::vector<uint8_t> codes(9, 4);
  codes[0] = 0;  // window (0, 0)'s top-left cell is padding
  EXPECT_DEATH(ops::WindowCodesToCells(Codes(codes, {1, 1, 3, 3}),
                                       Shape{1, 1, 5, 5}, padded),
               "outside");
  EXPECT_DEATH(ops::WindowCodesToCells(Codes(codes, {1, 1, 2, 3}),
                                       Shape{1, 1, 5, 5}, padded),
               "are not the codes of a pool");
}

// Where the CPU pools the first layer's convolution as it computes it but
// declines the backward (rows of fewer than eight windows), the window
// codes are turned into cells for the two ops' backward: the same
// gradients, bit for bit, as the two ops all the way.
TEST(WindowCodesTest, BackwardThroughCellsWhereTheFusedBackwardDeclines) {
  PhiloxGenerator generator(7);
  const TensorBase input = ops::RandomNormal(Shape{2, 1, 14, 14}, DType::kF32,
                                             Device::Cpu(), generator, 0, 1);
  const TensorBase weight = ops::RandomNormal(Shape{8, 1, 3, 3}, DType::kF32,
                                              Device::Cpu(), generator, 0, 1);
  const TensorBase bias =
      ops::RandomNormal(Shape{8}, DType::kF32, Device::Cpu(), generator, 0, 1);
  const Window2dGeometry conv{{3, 3}, {1, 1}, {1, 1}, {1, 1}};
  const Window2dGeometry pool{{2, 2}, {2, 2}, {0, 0}, {1, 1}};
  const ops::MaxPool2dResult fused = ops::Conv2dMaxPool(
      input, weight, bias, conv, pool, true, PoolActivation::kRelu);
  ASSERT_EQ(DType::kU8, fused.argmax.dtype()) << "the forward was not fused";
  const ops::MaxPool2dResult composed =
      ops::MaxPool2d(ops::Conv2d(input, weight, bias, conv), pool, true,
                     PoolActivation::kRelu);
  EXPECT_EQ(ToDoubles(composed.output), ToDoubles(fused.output));
  const Shape convolved{2, 8, 14, 14};
  EXPECT_EQ(ToDoubles(composed.argmax),
            ToDoubles(ops::WindowCodesToCells(fused.argmax, convolved, pool)));
  const TensorBase grad = ops::RandomNormal(Shape{2, 8, 7, 7}, DType::kF32,
                                            Device::Cpu(), generator, 0, 1);
  // A first layer's: the weight's and the bias's gradients only.
  const ops::Conv2dGradients ours = ops::Conv2dMaxPoolBackward(
      grad, fused.argmax, input, TensorBase(), input.shape(), weight.shape(),
      conv, pool, true);
  const ops::Conv2dGradients want = ops::Conv2dBackward(
      ops::MaxPool2dBackward(grad, composed.argmax, convolved, pool), input,
      TensorBase(), input.shape(), weight.shape(), conv, true);
  EXPECT_EQ(ToDoubles(want.weight), ToDoubles(ours.weight));
  EXPECT_EQ(ToDoubles(want.bias), ToDoubles(ours.bias));
}

}  // namespace
}  // namespace kindling
