// The pooled convolution's CPU kernels (Backend::Conv2dMaxPool and its
// backward) against the two ops they fuse run one after the other:
// - oneDNN's convolution pooled in its own layout (OneDnnConv2dMaxPool,
//   backend/cpu/blocked_max_pool.h) against OneDnnConv2d then
//   MaxPool2dKernel, and MaxPool2dBackwardKernel then OneDnnConv2dBackward;
// - Kindling's, a sample at a time (Conv2dMaxPoolKernel, conv2d.cc) against
//   Conv2dKernel then MaxPool2dKernel, and MaxPool2dBackwardKernel then
//   Conv2dBackwardKernel.
// The same convolution kernels compute the values either way, so the results
// must agree bit for bit: values, argmax (the fused kernels' window codes
// turned into cells) and every gradient. Covered: ties (a
// zero weight makes every window's cells equal), NaN, ReLU's dropped windows
// and -0 gradients, every backward combination, batches that split unevenly
// over the slabs (and one sample, whose GEMMs are split instead), and the
// shapes each path must decline (false, nothing written).
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/blocked_max_pool.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/window_ops.h"
#include "tests/support/cpu_tensors.h"

namespace kindling::cpu {
namespace {

constexpr Window2dGeometry kPool{.kernel = {2, 2}, .stride = {2, 2}};

using test_support::Empty;
using test_support::ExpectSameBits;
using test_support::FromFloats;
using test_support::RandomFloats;
using test_support::Values;

// OneDnnPoolBlock() is the channel block of the layout oneDNN's
// convolutions of 16 channels or more compute in here: 16 (nChw16c) on an
// AVX-512 CPU, 8 (nChw8c) on an AVX2 one or under ONEDNN_MAX_CPU_ISA=AVX2,
// 0 where the test cannot tell (another cap, KINDLING_ONEDNN set).
int64_t OneDnnPoolBlock() {
  if (std::getenv("KINDLING_ONEDNN") != nullptr) return 0;
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap != nullptr) return std::string(cap) == "AVX2" ? 8 : 0;
  if (__builtin_cpu_supports("avx512f")) return 16;
  return __builtin_cpu_supports("avx2") ? 8 : 0;
}

enum class Fill { kRandom, kTies, kNan };

struct PoolCase {
  std::string name;
  int64_t batch, channels, out_channels, height, width;
  Window2dGeometry conv;
  Fill fill = Fill::kRandom;
  bool bias = true;
  // Whether the path under test takes it (for oneDNN's: on an AVX2 or
  // AVX-512 CPU), and whether only with eight-channel blocks (AVX2).
  bool fused = true;
  bool only_by_8 = false;
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

// oneDNN's pooled convolution: 16 input channels and more.
std::vector<PoolCase> Cases() {
  const Window2dGeometry same{.kernel = {3, 3}, .padding = {1, 1}};
  return {
      // The example CNN's conv2 on 32 samples (Winograd, 16 a slab).
      {"cnn_conv2", 32, 32, 64, 14, 14, same},
      {"uneven_slabs", 5, 16, 32, 8, 6, same},
      {"no_bias", 3, 16, 16, 6, 10, same, Fill::kRandom, false},
      {"ties", 4, 16, 32, 6, 6, same, Fill::kTies},
      {"nan", 4, 16, 16, 8, 8, same, Fill::kNan},
      {"strided_conv",
       2,
       16,
       32,
       8,
       8,
       {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},
      // Whole blocks of 8 channels, not of 16: pooled on AVX2 only.
      {"eight_channel_blocks", 2, 16, 24, 6, 6, same, Fill::kRandom, true, true,
       true},
      // Declined: an odd output side, channels off the 8-wide blocks, one
      // input channel (Kindling's own kernel), a batch below the threads.
      {"odd_side", 2, 16, 16, 7, 8, same, Fill::kRandom, true, false},
      {"channels_off_blocks", 2, 16, 20, 6, 6, same, Fill::kRandom, true,
       false},
      {"one_input_channel", 2, 1, 32, 6, 6, same, Fill::kRandom, true, false},
      {"batch_below_threads", 1, 16, 16, 6, 6, same, Fill::kRandom, true,
       false},
  };
}

// Operands: one case's tensors.
struct Operands {
  explicit Operands(const PoolCase& c)
      : input_shape{c.batch, c.channels, c.height, c.width},
        weight_shape{c.out_channels, c.channels, c.conv.kernel[0],
                     c.conv.kernel[1]} {
    std::vector<float> image = RandomFloats(input_shape.num_elements(), 1);
    std::vector<float> kernel = RandomFloats(weight_shape.num_elements(), 2);
    std::vector<float> shift = RandomFloats(c.out_channels, 3);
    if (c.fill == Fill::kTies) {
      // Every cell of a channel is its bias: each window a four-way tie,
      // half the channels <= 0 (ReLU drops them), one exactly 0.
      kernel.assign(kernel.size(), 0.0f);
      shift[0] = 0.0f;
    }
    if (c.fill == Fill::kNan) {
      image[3] = std::numeric_limits<float>::quiet_NaN();
      image[image.size() / 2 + 5] = std::numeric_limits<float>::quiet_NaN();
    }
    input = FromFloats(image, input_shape);
    weight = FromFloats(kernel, weight_shape);
    if (c.bias) bias = FromFloats(shift, {c.out_channels});
    const int64_t reach_h = c.conv.kernel[0], reach_w = c.conv.kernel[1];
    convolved = Shape{
        c.batch, c.out_channels,
        (c.height + 2 * c.conv.padding[0] - reach_h) / c.conv.stride[0] + 1,
        (c.width + 2 * c.conv.padding[1] - reach_w) / c.conv.stride[1] + 1};
    pooled = Shape{c.batch, c.out_channels, convolved[2] / 2, convolved[3] / 2};
    std::vector<float> routed = RandomFloats(pooled.num_elements(), 4);
    for (size_t i = 0; i < routed.size(); i += 7) routed[i] = -0.0f;
    grad = FromFloats(routed, pooled);
  }

  Shape input_shape, weight_shape, convolved, pooled;
  TensorBase input, weight, bias, grad;
};

// Composed: the two ops one after the other; `codes` is their argmax as
// window codes, what the fused backward takes.
struct Composed {
  TensorBase convolved, out, argmax, codes;
};

// CellsToCodes() is a 2x2 / stride-2 pool's i64 argmax over planes
// `convolved` as window codes (backend.h).
TensorBase CellsToCodes(const TensorBase& argmax, const Shape& convolved) {
  const std::vector<int64_t> cells = Values<int64_t>(argmax);
  const int64_t width = convolved[3], out_h = convolved[2] / 2;
  const int64_t out_w = convolved[3] / 2;
  std::vector<uint8_t> codes(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i] < 0) {
      codes[i] = kNoWindowCell;
      continue;
    }
    const int64_t oh = i / out_w % out_h, ow = i % out_w;
    const int64_t h = cells[i] / width;
    const int64_t w = cells[i] % width;
    codes[i] = static_cast<uint8_t>((h - 2 * oh) * 2 + (w - 2 * ow));
  }
  return TensorBase::FromHost(codes.data(), argmax.shape(), DType::kU8,
                              Device::Cpu());
}

// CodesAsCells() is the fused kernels' window codes as MaxPool2d()'s cells.
std::vector<int64_t> CodesAsCells(const TensorBase& codes,
                                  const Shape& convolved) {
  return Values<int64_t>(ops::WindowCodesToCells(codes, convolved, kPool));
}

Composed ComposedForward(const PoolCase& c, const Operands& o,
                         PoolActivation activation) {
  Composed result{Empty(o.convolved), Empty(o.pooled),
                  Empty(o.pooled, DType::kI64)};
  if (!OneDnnConv2d(result.convolved, o.input, o.weight, o.bias, c.conv)) {
    Conv2dKernel(result.convolved, o.input, o.weight, o.bias, c.conv);
  }
  MaxPool2dKernel(result.out, result.argmax, result.convolved, kPool,
                  activation);
  result.codes = CellsToCodes(result.argmax, o.convolved);
  return result;
}

// Taken() is whether oneDNN's pooled convolution takes case `c` on this CPU
// (OneDnnPoolBlock() not 0).
bool Taken(const PoolCase& c) {
  return c.fused && c.batch >= MaxThreads() &&
         (!c.only_by_8 || OneDnnPoolBlock() == 8);
}

class OneDnnConv2dMaxPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(OneDnnConv2dMaxPoolTest, ForwardMatchesConvolutionThenPool) {
  const PoolCase& c = GetParam();
  const Operands o(c);
  for (PoolActivation activation :
       {PoolActivation::kNone, PoolActivation::kRelu}) {
    SCOPED_TRACE(activation == PoolActivation::kRelu ? "relu" : "none");
    const Composed expected = ComposedForward(c, o, activation);
    for (bool with_argmax : {true, false}) {
      const TensorBase out = Empty(o.pooled);
      const TensorBase argmax =
          with_argmax ? Empty(o.pooled, DType::kU8) : TensorBase();
      const bool taken = OneDnnConv2dMaxPool(out, argmax, o.input, o.weight,
                                             o.bias, c.conv, kPool, activation);
      if (OneDnnPoolBlock() != 0) EXPECT_EQ(taken, Taken(c));
      if (!c.fused) {
        EXPECT_FALSE(taken);
      }
      if (!taken) continue;
      ExpectSameBits(out, expected.out, "pooled values");
      if (with_argmax) {
        EXPECT_EQ(CodesAsCells(argmax, o.convolved),
                  Values<int64_t>(expected.argmax));
      }
    }
  }
}

TEST_P(OneDnnConv2dMaxPoolTest, EveryBackwardCombinationMatches) {
  const PoolCase& c = GetParam();
  const Operands o(c);
  const Composed forward = ComposedForward(c, o, PoolActivation::kRelu);
  const TensorBase conv_grad = Empty(o.convolved);
  MaxPool2dBackwardKernel(conv_grad, o.grad, forward.argmax, kPool);
  for (int wanted = 1; wanted < 8; ++wanted) {
    const bool input = wanted & 1, weight = wanted & 2, bias = wanted & 4;
    if (!input && !weight) continue;  // the contract asks for one of them
    if (bias && (!c.bias || !weight)) continue;
    SCOPED_TRACE(::testing::Message() << "input " << input << " weight "
                                      << weight << " bias " << bias);
    auto grads = [&] {
      return std::vector<TensorBase>{
          input ? Empty(o.input_shape) : TensorBase(),
          weight ? Empty(o.weight_shape) : TensorBase(),
          bias ? Empty({c.out_channels}) : TensorBase()};
    };
    const std::vector<TensorBase> ours = grads(), expected = grads();
    const bool taken = OneDnnConv2dMaxPoolBackward(
        ours[0], ours[1], ours[2], o.grad, forward.codes, o.input, o.weight,
        c.conv, kPool);
    if (OneDnnPoolBlock() != 0) EXPECT_EQ(taken, Taken(c));
    if (!c.fused) {
      EXPECT_FALSE(taken);
    }
    if (!taken) continue;
    ASSERT_TRUE(OneDnnConv2dBackward(expected[0], expected[1], expected[2],
                                     conv_grad, o.input, o.weight, c.conv));
    for (int i = 0; i < 3; ++i) {
      if (ours[i].defined()) ExpectSameBits(ours[i], expected[i], "gradient");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OneDnnConv2dMaxPoolTest,
                         ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// Kindling's pooled kernels: one input channel (small_patch_products.h's
// patches), the cases marked fused taken on every CPU.
std::vector<PoolCase> KindlingCases() {
  const Window2dGeometry same{.kernel = {3, 3}, .padding = {1, 1}};
  return {
      // The example CNN's conv1 on 8 samples.
      {"cnn_conv1", 8, 1, 32, 28, 28, same},
      {"uneven_slabs", 5, 1, 16, 16, 20, same},
      {"one_sample", 1, 1, 8, 16, 16, same},
      {"no_bias", 3, 1, 8, 16, 18, same, Fill::kRandom, false},
      {"ties", 4, 1, 8, 16, 16, same, Fill::kTies},
      {"nan", 4, 1, 8, 16, 16, same, Fill::kNan},
      {"strided_conv",
       2,
       1,
       8,
       32,
       32,
       {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}},
      // Declined: an odd output side, a patch above 12 taps.
      {"odd_side", 2, 1, 8, 15, 16, same, Fill::kRandom, true, false},
      {"two_channels", 2, 2, 8, 16, 16, same, Fill::kRandom, true, false},
  };
}

class Conv2dMaxPoolKernelTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(Conv2dMaxPoolKernelTest, ForwardMatchesConvolutionThenPool) {
  const PoolCase& c = GetParam();
  const Operands o(c);
  for (PoolActivation activation :
       {PoolActivation::kNone, PoolActivation::kRelu}) {
    SCOPED_TRACE(activation == PoolActivation::kRelu ? "relu" : "none");
    const Composed expected = ComposedForward(c, o, activation);
    for (bool with_argmax : {true, false}) {
      const TensorBase out = Empty(o.pooled);
      const TensorBase argmax =
          with_argmax ? Empty(o.pooled, DType::kU8) : TensorBase();
      ASSERT_EQ(c.fused,
                Conv2dMaxPoolKernel(out, argmax, o.input, o.weight, o.bias,
                                    c.conv, kPool, activation));
      if (!c.fused) continue;
      ExpectSameBits(out, expected.out, "pooled values");
      if (with_argmax) {
        EXPECT_EQ(CodesAsCells(argmax, o.convolved),
                  Values<int64_t>(expected.argmax));
      }
    }
  }
}

TEST_P(Conv2dMaxPoolKernelTest, ParameterGradientsMatch) {
  const PoolCase& c = GetParam();
  const Operands o(c);
  const Composed forward = ComposedForward(c, o, PoolActivation::kRelu);
  const TensorBase conv_grad = Empty(o.convolved);
  MaxPool2dBackwardKernel(conv_grad, o.grad, forward.argmax, kPool);
  const TensorBase bias_grad = c.bias ? Empty({c.out_channels}) : TensorBase();
  const TensorBase weight_grad = Empty(o.weight_shape);
  // The input's gradient (not a first layer's) is declined.
  EXPECT_FALSE(Conv2dMaxPoolBackwardKernel(Empty(o.input_shape), weight_grad,
                                           bias_grad, o.grad, forward.codes,
                                           o.input, o.weight, c.conv, kPool));
  ASSERT_EQ(c.fused, Conv2dMaxPoolBackwardKernel(
                         TensorBase(), weight_grad, bias_grad, o.grad,
                         forward.codes, o.input, o.weight, c.conv, kPool));
  if (!c.fused) return;
  const TensorBase expected_weight = Empty(o.weight_shape);
  const TensorBase expected_bias =
      c.bias ? Empty({c.out_channels}) : TensorBase();
  Conv2dBackwardKernel(TensorBase(), expected_weight, expected_bias, conv_grad,
                       o.input, o.weight, c.conv);
  ExpectSameBits(weight_grad, expected_weight, "weight gradient");
  if (c.bias) ExpectSameBits(bias_grad, expected_bias, "bias gradient");
}

TEST(Conv2dMaxPoolKernelTest, BackwardDeclinesRowsOfFewerThanEightWindows) {
  // MaxPool2x2BackwardRow() needs eight windows a row; the forward takes any.
  const PoolCase c{"short_rows",
                   2,
                   1,
                   8,
                   14,
                   14,
                   Window2dGeometry{.kernel = {3, 3}, .padding = {1, 1}}};
  const Operands o(c);
  const Composed forward = ComposedForward(c, o, PoolActivation::kRelu);
  EXPECT_TRUE(Conv2dMaxPoolKernel(Empty(o.pooled), TensorBase(), o.input,
                                  o.weight, o.bias, c.conv, kPool,
                                  PoolActivation::kRelu));
  EXPECT_FALSE(Conv2dMaxPoolBackwardKernel(
      TensorBase(), Empty(o.weight_shape), Empty({c.out_channels}), o.grad,
      forward.codes, o.input, o.weight, c.conv, kPool));
}

INSTANTIATE_TEST_SUITE_P(Cases, Conv2dMaxPoolKernelTest,
                         ::testing::ValuesIn(KindlingCases()),
                         [](const auto& info) { return info.param.name; });

// ToBlocked() lays [N, C, H, W] out as nChw16c or nChw8c (p.block).
std::vector<float> ToBlocked(const std::vector<float>& plain,
                             const BlockedPlanes& p) {
  std::vector<float> blocked(plain.size());
  for (int64_t n = 0; n < p.samples; ++n) {
    for (int64_t c = 0; c < p.channels; ++c) {
      for (int64_t hw = 0; hw < p.height * p.width; ++hw) {
        const int64_t block = n * (p.channels / p.block) + c / p.block;
        blocked[(block * p.height * p.width + hw) * p.block + c % p.block] =
            plain[(n * p.channels + c) * p.height * p.width + hw];
      }
    }
  }
  return blocked;
}

// The blocks of oneDNN's AVX-512 (nChw16c) and AVX2 (nChw8c) layouts.
class BlockedMaxPoolTest : public ::testing::TestWithParam<int64_t> {};

// The kernels on their own, on hand-made values: a NaN after a number and a
// number after a NaN in the same window, exact ties, negatives under ReLU.
TEST_P(BlockedMaxPoolTest, MatchesMaxPool2dKernelOnNcbwValues) {
  const BlockedPlanes planes{2, 32, 4, 6, GetParam()};
  const Shape shape{2, 32, 4, 6}, pooled{2, 32, 2, 3};
  std::vector<float> plain = RandomFloats(shape.num_elements(), 7);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  plain[1] = nan;        // second cell of window (0, 0), plane 0
  plain[24 + 6] = nan;   // first cell of window (0, 0), plane 1
  plain[24 + 7] = 5.0f;  // a number after that NaN
  plain[48 + 0] = plain[48 + 1] = plain[48 + 6] = plain[48 + 7] = 2.0f;
  plain[72 + 2] = plain[72 + 3] = plain[72 + 8] = plain[72 + 9] = -1.0f;
  const std::vector<float> blocked = ToBlocked(plain, planes);
  for (PoolActivation activation :
       {PoolActivation::kNone, PoolActivation::kRelu}) {
    const TensorBase expected = Empty(pooled);
    const TensorBase expected_argmax = Empty(pooled, DType::kI64);
    MaxPool2dKernel(expected, expected_argmax, FromFloats(plain, shape), kPool,
                    activation);
    std::vector<float> out(pooled.num_elements());
    std::vector<uint8_t> codes(pooled.num_elements());
    MaxPoolBlocked(blocked.data(), planes, activation, out.data(),
                   codes.data());
    ExpectSameBits(FromFloats(out, pooled), expected, "values");
    EXPECT_EQ(codes, Values<uint8_t>(CellsToCodes(expected_argmax, shape)));

    // The backward through that argmax, -0 gradients included.
    std::vector<float> grad = RandomFloats(pooled.num_elements(), 8);
    grad[0] = -0.0f;
    const TensorBase expected_grad = Empty(shape);
    MaxPool2dBackwardKernel(expected_grad, FromFloats(grad, pooled),
                            expected_argmax, kPool);
    std::vector<float> routed(shape.num_elements(), 123.0f);
    UnpoolBlocked(grad.data(), codes.data(), planes, routed.data());
    EXPECT_EQ(routed, ToBlocked(Values<float>(expected_grad), planes));
  }
}

TEST_P(BlockedMaxPoolTest, ACodeOutsideItsWindowRoutesNothing) {
  const int64_t block = GetParam();
  const BlockedPlanes planes{1, 16, 2, 2, block};
  const std::vector<float> grad(16, 1.0f);
  std::vector<uint8_t> codes(16, 3);  // the bottom-right cell
  codes[0] = kNoWindowCell;
  codes[1] = 4;  // past the 2 x 2 window
  std::vector<float> blocked(64, 7.0f);
  UnpoolBlocked(grad.data(), codes.data(), planes, blocked.data());
  for (int64_t c = 0; c < 16; ++c) {
    for (int64_t cell = 0; cell < 4; ++cell) {
      const int64_t at = ((c / block) * 4 + cell) * block + c % block;
      const bool routed = cell == 3 && c >= 2;
      EXPECT_EQ(blocked[at], routed ? 1.0f : 0.0f)
          << "cell " << cell << " channel " << c;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, BlockedMaxPoolTest,
                         ::testing::Values(int64_t{16}, int64_t{8}),
                         [](const auto& info) {
                           return "nChw" + std::to_string(info.param) + "c";
                         });

TEST(FitsBlockedMaxPoolTest, FitsOnlyItsPool) {
  EXPECT_TRUE(FitsBlockedMaxPool({1, 32, 14, 14, 16}, kPool));
  EXPECT_TRUE(FitsBlockedMaxPool({1, 24, 14, 14, 8}, kPool));
  EXPECT_FALSE(FitsBlockedMaxPool({1, 24, 14, 14, 16}, kPool));  // 16-blocks
  EXPECT_FALSE(FitsBlockedMaxPool({1, 12, 14, 14, 8}, kPool));   // 8-blocks
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 14, 14, 4}, kPool));   // no kernel
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 14, 14, 0}, kPool));   // plain
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 13, 14, 16}, kPool));  // odd height
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 14, 15, 16}, kPool));  // odd width
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 14, 14, 16},
                                  {.kernel = {2, 2}, .stride = {1, 1}}));
  EXPECT_FALSE(FitsBlockedMaxPool(
      {1, 32, 14, 14, 16},
      {.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 0}}));
  EXPECT_FALSE(FitsBlockedMaxPool({1, 32, 14, 14, 16},
                                  {.kernel = {3, 3}, .stride = {2, 2}}));
}

}  // namespace
}  // namespace kindling::cpu
