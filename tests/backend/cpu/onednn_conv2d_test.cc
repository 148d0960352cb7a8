// backend/cpu/onednn_conv2d.h against Kindling's own Conv2d kernels in f64
// (backend/cpu/conv2d.cc, themselves tested against the composed im2col +
// GEMM reference) on edge shapes: padding, stride, dilation, odd sizes,
// channel counts off oneDNN's 16-wide blocks, batches that do not split
// evenly over the threads' slabs (and one smaller than the thread count,
// declined), strided input views, no bias; forward and every backward
// combination; the example CNN's second layer, where oneDNN picks Winograd
// (within the same tolerance). Shapes oneDNN cannot express must be
// declined (false), never computed wrong.
#include "kindling/backend/cpu/onednn_conv2d.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/tensor/tensor.h"

namespace kindling::cpu {
namespace {

struct ConvCase {
  std::string name;
  int64_t batch, channels, out_channels, height, width;
  Window2dGeometry window;
  bool bias = true;
  int64_t extra_width = 0;  // the input is a view into a wider buffer
};

std::vector<ConvCase> Cases() {
  return {
      {"same_3x3", 2, 3, 4, 7, 9, {.kernel = {3, 3}, .padding = {1, 1}}},
      {"stride_odd_sizes",
       3,
       5,
       6,
       11,
       9,
       {.kernel = {3, 2}, .stride = {2, 3}, .padding = {1, 1}}},
      {"dilation_batch_one",
       1,
       2,
       3,
       9,
       10,
       {.kernel = {3, 3}, .padding = {2, 2}, .dilation = {2, 2}}},
      {"one_by_one_tails", 2, 17, 19, 5, 6, {.kernel = {1, 1}}, false},
      {"first_layer", 4, 1, 32, 12, 12, {.kernel = {3, 3}, .padding = {1, 1}}},
      {"two_channels", 4, 2, 32, 12, 12, {.kernel = {3, 3}, .padding = {1, 1}}},
      {"view_input",
       2,
       3,
       16,
       6,
       7,
       {.kernel = {3, 3}, .padding = {1, 1}},
       true,
       5},
      {"wide_blocks", 2, 32, 64, 6, 6, {.kernel = {3, 3}, .padding = {1, 1}}},
      // The example CNN's conv2: on AVX-512, oneDNN's convolution_auto takes
      // Winograd for the forward and the data gradient from 16 samples a
      // slab (onednn_conv2d.cc): 32 samples on 2 threads.
      {"cnn_conv2", 32, 32, 64, 14, 14, {.kernel = {3, 3}, .padding = {1, 1}}},
  };
}

int64_t OutputSize(int64_t input, int axis, const Window2dGeometry& w) {
  const int64_t reach = (w.kernel[axis] - 1) * w.dilation[axis] + 1;
  return (input + 2 * w.padding[axis] - reach) / w.stride[axis] + 1;
}

std::vector<double> RandomValues(int64_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<double> normal;
  std::vector<double> values(count);
  for (double& v : values) v = normal(engine);
  return values;
}

// Tensor() is `values` as a contiguous tensor of `dtype`.
TensorBase MakeTensor(const std::vector<double>& values, const Shape& shape,
                      DType dtype) {
  if (dtype == DType::kF64) {
    return TensorBase::FromHost(values.data(), shape, dtype, Device::Cpu());
  }
  const std::vector<float> floats(values.begin(), values.end());
  return TensorBase::FromHost(floats.data(), shape, dtype, Device::Cpu());
}

// The input: contiguous, or the first W columns of a [N, C, H, W + extra]
// buffer.
TensorBase MakeInput(const ConvCase& c, DType dtype) {
  const int64_t wide = c.width + c.extra_width;
  const Shape shape{c.batch, c.channels, c.height, wide};
  const TensorBase buffer =
      MakeTensor(RandomValues(shape.num_elements(), 1), shape, dtype);
  if (c.extra_width == 0) return buffer;
  return TensorBase(buffer.storage(), dtype,
                    {c.batch, c.channels, c.height, c.width}, buffer.strides(),
                    0);
}

std::vector<double> ToDoubles(const TensorBase& tensor) {
  std::vector<double> values(tensor.shape().num_elements());
  if (tensor.dtype() == DType::kF64) {
    tensor.CopyToHost(values.data());
  } else {
    std::vector<float> floats(values.size());
    tensor.CopyToHost(floats.data());
    values.assign(floats.begin(), floats.end());
  }
  return values;
}

// ExpectClose() allows f32's rounding of each value, plus a part of the
// largest one: an entry that is a sum of many terms (a weight gradient over
// a batch) can cancel to far below the terms it rounded.
void ExpectClose(const TensorBase& actual, const TensorBase& expected,
                 const std::string& what) {
  const std::vector<double> a = ToDoubles(actual), e = ToDoubles(expected);
  ASSERT_EQ(a.size(), e.size()) << what;
  double largest = 0;
  for (double value : e) largest = std::max(largest, std::fabs(value));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], e[i], 2e-5 * (1 + std::fabs(e[i])) + 2e-6 * largest)
        << what << " at " << i;
  }
}

// Operands: one case's tensors in one dtype.
struct Operands {
  Operands(const ConvCase& c, DType dtype)
      : input(MakeInput(c, dtype)),
        weight(
            MakeTensor(RandomValues(c.out_channels * c.channels *
                                        c.window.kernel[0] * c.window.kernel[1],
                                    2),
                       {c.out_channels, c.channels, c.window.kernel[0],
                        c.window.kernel[1]},
                       dtype)),
        bias(c.bias ? MakeTensor(RandomValues(c.out_channels, 3),
                                 {c.out_channels}, dtype)
                    : TensorBase()),
        out_shape{c.batch, c.out_channels, OutputSize(c.height, 0, c.window),
                  OutputSize(c.width, 1, c.window)},
        grad(MakeTensor(RandomValues(out_shape.num_elements(), 4), out_shape,
                        dtype)) {}

  TensorBase input, weight, bias;
  Shape out_shape;
  TensorBase grad;
};

TensorBase Empty(const Shape& shape, DType dtype) {
  return TensorBase::Empty(shape, dtype, Device::Cpu());
}

class OneDnnConv2dTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OneDnnConv2dTest, ForwardMatchesKindlingsKernelInF64) {
  const ConvCase& c = GetParam();
  const Operands f32(c, DType::kF32), f64(c, DType::kF64);
  const TensorBase out = Empty(f32.out_shape, DType::kF32);
  const bool taken =
      OneDnnConv2d(out, f32.input, f32.weight, f32.bias, c.window);
  // A single input channel's forward stays on Kindling's kernel (faster),
  // and so does a batch smaller than the thread count (one slab per thread).
  ASSERT_EQ(taken, c.channels > 1 && c.batch >= MaxThreads());
  if (!taken) return;
  const TensorBase expected = Empty(f64.out_shape, DType::kF64);
  Conv2dKernel(expected, f64.input, f64.weight, f64.bias, c.window);
  ExpectClose(out, expected, "forward");
}

TEST_P(OneDnnConv2dTest, EveryBackwardCombinationMatches) {
  const ConvCase& c = GetParam();
  const Operands f32(c, DType::kF32), f64(c, DType::kF64);
  const Shape input_shape{c.batch, c.channels, c.height, c.width};
  for (int wanted = 1; wanted < 8; ++wanted) {
    const bool input = wanted & 1, weight = wanted & 2, bias = wanted & 4;
    if (!input && !weight) continue;  // the contract asks for one of them
    if (bias && !c.bias) continue;
    SCOPED_TRACE(::testing::Message() << "input " << input << " weight "
                                      << weight << " bias " << bias);
    auto grads = [&](DType dtype) {
      return std::vector<TensorBase>{
          input ? Empty(input_shape, dtype) : TensorBase(),
          weight ? Empty(f32.weight.shape(), dtype) : TensorBase(),
          bias ? Empty({c.out_channels}, dtype) : TensorBase()};
    };
    const std::vector<TensorBase> ours = grads(DType::kF32),
                                  expected = grads(DType::kF64);
    const bool taken = OneDnnConv2dBackward(ours[0], ours[1], ours[2], f32.grad,
                                            f32.input, f32.weight, c.window);
    // The bias gradient comes only with the weights' (else declined); a
    // batch smaller than the thread count and a single input channel are
    // left to Kindling's kernel.
    ASSERT_EQ(taken,
              !(bias && !weight) && c.batch >= MaxThreads() && c.channels > 1);
    if (!taken) continue;
    Conv2dBackwardKernel(expected[0], expected[1], expected[2], f64.grad,
                         f64.input, f64.weight, c.window);
    for (int i = 0; i < 3; ++i) {
      if (ours[i].defined()) ExpectClose(ours[i], expected[i], "gradient");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OneDnnConv2dTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(OneDnnConv2dDeclineTest, F64AndWindowsOneDnnCannotPadAreDeclined) {
  const ConvCase f64_case{"", 1, 2, 3, 5, 5, {.kernel = {3, 3}}};
  const Operands f64(f64_case, DType::kF64);
  EXPECT_FALSE(OneDnnConv2d(Empty(f64.out_shape, DType::kF64), f64.input,
                            f64.weight, f64.bias, f64_case.window));
  // Stride 2 over 8 cells with a 3-wide window and no padding: the last
  // window ends a cell short of the input's end (a negative right padding).
  const ConvCase short_case{
      "", 1, 2, 3, 8, 8, {.kernel = {3, 3}, .stride = {2, 2}}};
  const Operands f32(short_case, DType::kF32);
  EXPECT_FALSE(OneDnnConv2d(Empty(f32.out_shape, DType::kF32), f32.input,
                            f32.weight, f32.bias, short_case.window));
}

// OneDnnComputesBy8() is true where oneDNN's convolutions of 16 channels or
// more run in nChw8c here, so that winograd_conv3x3.h takes their 3 x 3
// stride-1 layers: an AVX2 CPU, or ONEDNN_MAX_CPU_ISA=AVX2 (false where the
// test cannot tell: another cap, or KINDLING_ONEDNN set).
bool OneDnnComputesBy8() {
  if (std::getenv("KINDLING_ONEDNN") != nullptr) return false;
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap != nullptr) return std::string(cap) == "AVX2";
  return !__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
}

// With winograd_conv3x3.h on (the default) and off, the forward and the
// input, weight and bias gradients match the f64 reference; where oneDNN
// computes in nChw8c the output and the input and weight gradients differ
// somewhere (Winograd rounds differently), which shows that the Winograd
// kernels ran. Above 256 channels (kMaxWinogradChannels in the .cc)
// oneDNN's direct kernel runs either way: the same bits.
TEST(OneDnnConv2dWinogradTest, OnAndOffBothMatchAndDifferWhereTaken) {
  const std::vector<ConvCase> cases = {
      {"cnn_conv2", 8, 32, 64, 14, 14, {.kernel = {3, 3}, .padding = {1, 1}}},
      {"odd", 5, 16, 24, 9, 7, {.kernel = {3, 3}, .padding = {1, 1}}},
      {"over_256_channels",
       2,
       264,
       16,
       4,
       5,
       {.kernel = {3, 3}, .padding = {1, 1}}},
  };
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Operands f32(c, DType::kF32), f64(c, DType::kF64);
    const Shape input_shape{c.batch, c.channels, c.height, c.width};
    const TensorBase expected_out = Empty(f64.out_shape, DType::kF64);
    Conv2dKernel(expected_out, f64.input, f64.weight, f64.bias, c.window);
    auto gradients = [&](DType dtype) {
      return std::vector<TensorBase>{Empty(input_shape, dtype),
                                     Empty(f32.weight.shape(), dtype),
                                     Empty({c.out_channels}, dtype)};
    };
    const std::vector<TensorBase> expected = gradients(DType::kF64);
    Conv2dBackwardKernel(expected[0], expected[1], expected[2], f64.grad,
                         f64.input, f64.weight, c.window);
    // [on, off] x [output, input gradient, weight gradient, bias gradient]
    std::vector<std::vector<std::vector<double>>> results;
    for (bool winograd : {true, false}) {
      SetWinogradConv3x3(winograd);
      const TensorBase out = Empty(f32.out_shape, DType::kF32);
      const std::vector<TensorBase> ours = gradients(DType::kF32);
      ASSERT_TRUE(OneDnnConv2d(out, f32.input, f32.weight, f32.bias, c.window));
      ASSERT_TRUE(OneDnnConv2dBackward(ours[0], ours[1], ours[2], f32.grad,
                                       f32.input, f32.weight, c.window));
      ExpectClose(out, expected_out, "forward");
      results.push_back({ToDoubles(out)});
      for (int i = 0; i < 3; ++i) {
        ExpectClose(ours[i], expected[i], "gradient " + std::to_string(i));
        results.back().push_back(ToDoubles(ours[i]));
      }
    }
    SetWinogradConv3x3(true);
    if (c.channels > 256) {
      for (int i = 0; i < 4; ++i) EXPECT_EQ(results[0][i], results[1][i]) << i;
    } else if (OneDnnComputesBy8()) {
      // The bias gradient, a plain sum either way, may agree to the bit.
      for (int i = 0; i < 3; ++i) EXPECT_NE(results[0][i], results[1][i]) << i;
    }
  }
}

}  // namespace
}  // namespace kindling::cpu
