// backend/cpu/winograd_conv3x3.h against a direct convolution summed in
// double, on the blocked layout it reads and writes: odd heights and widths
// (tiles past the edge), images of one cell, channel counts of one and of
// several eight-channel blocks, output channels that end on a half column
// of the register tile, tile counts that end mid register tile and chunks
// that span samples, with and without a bias; and the data gradient's
// turned filters against the direct adjoint. The tolerance is relative to
// the sum of |input x weight| of each output (Winograd's transforms add up
// to 16 inputs before rounding).
#include "kindling/backend/cpu/winograd_conv3x3.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

struct Case {
  std::string name;
  WinogradShape shape;
  bool bias;
};

std::vector<Case> Cases() {
  return {
      {"one_cell", {2, 8, 8, 1, 1}, true},
      {"odd_sides", {3, 16, 24, 5, 7}, true},
      {"tall_thin", {2, 8, 16, 9, 2}, false},
      {"many_samples_small", {13, 8, 8, 3, 3}, true},
      {"wide_blocks", {2, 24, 40, 6, 4}, true},
      {"cnn_conv2", {3, 32, 64, 14, 14}, true},
      {"cnn_conv2_data_gradient", {3, 64, 32, 14, 14}, false},
  };
}

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& value : values) value = normal(engine);
  return values;
}

// Index of (n, c, y, x) in [N, C / 8, H, W, 8].
int64_t Blocked(const WinogradShape& s, int64_t channels, int64_t n, int64_t c,
                int64_t y, int64_t x) {
  return (((n * (channels / 8) + c / 8) * s.height + y) * s.width + x) * 8 +
         c % 8;
}

// Expected: a direct 3 x 3, padding-1 convolution of `src` (blocked) by
// `weight` [K, C, 3, 3] (each filter turned where `turned`, with the
// roles of K and C swapped as the data gradient's are), in double, and the
// sum of |terms| of each output.
struct Expected {
  std::vector<double> value, magnitude;
};

Expected Direct(const WinogradShape& s, const std::vector<float>& src,
                const std::vector<float>& weight, const float* bias,
                bool turned) {
  const int64_t cin = s.in_channels, cout = s.out_channels;
  Expected e{std::vector<double>(s.samples * cout * s.height * s.width),
             std::vector<double>(s.samples * cout * s.height * s.width)};
  for (int64_t n = 0; n < s.samples; ++n) {
    for (int64_t k = 0; k < cout; ++k) {
      for (int64_t y = 0; y < s.height; ++y) {
        for (int64_t x = 0; x < s.width; ++x) {
          double sum = bias != nullptr ? bias[k] : 0, magnitude = 0;
          for (int64_t c = 0; c < cin; ++c) {
            for (int64_t i = 0; i < 3; ++i) {
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t yy = y + i - 1, xx = x + j - 1;
                if (yy < 0 || yy >= s.height || xx < 0 || xx >= s.width) {
                  continue;
                }
                // turned: the forward layer's weight [C_fwd = cout,
                // K_fwd = cin], entry (2 - i, 2 - j).
                const double w =
                    turned ? weight[((c * cout + k) * 3 + 2 - i) * 3 + 2 - j]
                           : weight[((k * cin + c) * 3 + i) * 3 + j];
                const double term = w * src[Blocked(s, cin, n, c, yy, xx)];
                sum += term;
                magnitude += std::fabs(term);
              }
            }
          }
          const int64_t at = Blocked(s, cout, n, k, y, x);
          e.value[at] = sum;
          e.magnitude[at] = magnitude;
        }
      }
    }
  }
  return e;
}

// ExpectNear() allows `relative` of each expected value's sum of |terms|.
void ExpectNear(const std::vector<float>& got, const Expected& want,
                double relative = 2e-6) {
  ASSERT_EQ(got.size(), want.value.size());
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    const double tolerance = relative * (want.magnitude[i] + 1);
    if (!(std::fabs(got[i] - want.value[i]) <= tolerance)) {
      ADD_FAILURE() << "element " << i << ": " << got[i] << " against "
                    << want.value[i] << " (tolerance " << tolerance << ")";
      ++failures;
    }
  }
}

class WinogradConv3x3Test : public testing::TestWithParam<Case> {};

TEST_P(WinogradConv3x3Test, MatchesTheDirectSum) {
  const WinogradShape& s = GetParam().shape;
  const int64_t plane = s.height * s.width;
  const std::vector<float> src = Random(s.samples * s.in_channels * plane, 1);
  const std::vector<float> weight =
      Random(s.out_channels * s.in_channels * 9, 2);
  const std::vector<float> bias = Random(s.out_channels, 3);
  const float* bias_or_null = GetParam().bias ? bias.data() : nullptr;
  std::vector<float> u(WinogradWeightsSize(s.out_channels, s.in_channels));
  WinogradWeights(weight.data(), s.out_channels, s.in_channels, u.data());
  // NaN: every output must be written.
  std::vector<float> dst(s.samples * s.out_channels * plane, NAN);
  WinogradConv3x3(src.data(), u.data(), bias_or_null, s, dst.data());
  ExpectNear(dst, Direct(s, src, weight, bias_or_null, /*turned=*/false));
}

// The data gradient: the same kernel over the output's gradient (channels
// K) with the turned filters gives the input's gradient (channels C) of the
// forward layer [K, C, 3, 3].
TEST_P(WinogradConv3x3Test, DataGradientMatchesTheDirectAdjoint) {
  const WinogradShape& forward = GetParam().shape;
  const WinogradShape s{forward.samples, forward.out_channels,
                        forward.in_channels, forward.height, forward.width};
  const int64_t plane = s.height * s.width;
  const std::vector<float> grad = Random(s.samples * s.in_channels * plane, 4);
  // The forward layer's weight: [forward K = s.in, forward C = s.out, 3, 3].
  const std::vector<float> weight =
      Random(s.in_channels * s.out_channels * 9, 5);
  std::vector<float> u(WinogradWeightsSize(s.in_channels, s.out_channels));
  WinogradDataGradientWeights(weight.data(), s.in_channels, s.out_channels,
                              u.data());
  std::vector<float> dst(s.samples * s.out_channels * plane, NAN);
  WinogradConv3x3(grad.data(), u.data(), nullptr, s, dst.data());
  ExpectNear(dst, Direct(s, grad, weight, nullptr, /*turned=*/true));
}

// The weights' gradient: sum over the samples and cells of grad[n, k, y, x]
// src[n, c, y + i - 1, x + j - 1], in double; the bias's: sum of grad. The
// tolerance is wider: each entry sums N x H x W terms in f32.
TEST_P(WinogradConv3x3Test, WeightGradientMatchesTheDirectSum) {
  const WinogradShape& s = GetParam().shape;
  const int64_t plane = s.height * s.width;
  const std::vector<float> src = Random(s.samples * s.in_channels * plane, 8);
  const std::vector<float> grad = Random(s.samples * s.out_channels * plane, 9);
  Expected weight{std::vector<double>(s.out_channels * s.in_channels * 9),
                  std::vector<double>(s.out_channels * s.in_channels * 9)};
  Expected bias{std::vector<double>(s.out_channels),
                std::vector<double>(s.out_channels)};
  for (int64_t n = 0; n < s.samples; ++n) {
    for (int64_t k = 0; k < s.out_channels; ++k) {
      for (int64_t y = 0; y < s.height; ++y) {
        for (int64_t x = 0; x < s.width; ++x) {
          const double g = grad[Blocked(s, s.out_channels, n, k, y, x)];
          bias.value[k] += g;
          bias.magnitude[k] += std::fabs(g);
          for (int64_t c = 0; c < s.in_channels; ++c) {
            for (int64_t i = 0; i < 3; ++i) {
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t yy = y + i - 1, xx = x + j - 1;
                if (yy < 0 || yy >= s.height || xx < 0 || xx >= s.width) {
                  continue;
                }
                const double term =
                    g * src[Blocked(s, s.in_channels, n, c, yy, xx)];
                const int64_t at = ((k * s.in_channels + c) * 3 + i) * 3 + j;
                weight.value[at] += term;
                weight.magnitude[at] += std::fabs(term);
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> weight_grad(weight.value.size(), NAN);
  std::vector<float> bias_grad(s.out_channels, NAN);
  WinogradWeightGradient(src.data(), grad.data(), s, weight_grad.data(),
                         GetParam().bias ? bias_grad.data() : nullptr);
  ExpectNear(weight_grad, weight, 1e-5);
  if (GetParam().bias) ExpectNear(bias_grad, bias, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradConv3x3Test,
                         testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// One sample's result does not depend on the samples around it (chunks of
// tiles span samples): sample 1 of three equals sample 0 of one.
TEST(WinogradConv3x3, SamplesAreIndependentOfTheirNeighbours) {
  const WinogradShape three{3, 16, 16, 7, 5}, one{1, 16, 16, 7, 5};
  const int64_t sample_in = 16 * 7 * 5, sample_out = 16 * 7 * 5;
  const std::vector<float> src = Random(3 * sample_in, 6);
  const std::vector<float> weight = Random(16 * 16 * 9, 7);
  std::vector<float> u(WinogradWeightsSize(16, 16));
  WinogradWeights(weight.data(), 16, 16, u.data());
  std::vector<float> all(3 * sample_out), alone(sample_out);
  WinogradConv3x3(src.data(), u.data(), nullptr, three, all.data());
  WinogradConv3x3(src.data() + sample_in, u.data(), nullptr, one, alone.data());
  for (int64_t i = 0; i < sample_out; ++i) {
    ASSERT_EQ(all[sample_out + i], alone[i]) << i;
  }
}

}  // namespace
}  // namespace kindling::cpu
