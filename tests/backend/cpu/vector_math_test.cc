// The vector math functions against the correctly rounded result (the double
// function, rounded to float), over about a million inputs each.
#include "kindling/backend/cpu/vector_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <numbers>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// OrderedBits() maps floats to integers in value order, so that the
// difference of two is their distance in ulps (across zero too).
int64_t OrderedBits(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  return bits < 0 ? int64_t{INT32_MIN} - bits : bits;
}

int64_t UlpDistance(float a, float b) {
  return std::abs(OrderedBits(a) - OrderedBits(b));
}

// Apply() runs an eight-lane function on `inputs` (any count).
std::vector<float> Apply(__m256 (*function)(__m256),
                         const std::vector<float>& inputs) {
  std::vector<float> outputs(inputs.size());
  for (size_t i = 0; i < inputs.size(); i += 8) {
    const int64_t count = std::min<int64_t>(8, inputs.size() - i);
    StorePartial(outputs.data() + i, count,
                 function(LoadPartial(inputs.data() + i, count, 0.0f)));
  }
  return outputs;
}

float Apply(__m256 (*function)(__m256), float x) {
  return Apply(function, std::vector<float>{x})[0];
}

// Apply16() is a sixteen-lane function over `inputs`, sixteen at a time
// (the last vector padded with 1). REQUIRES: HasAvx512().
KINDLING_AVX512_BEGIN
template <class F16>
KINDLING_AVX512 std::vector<float> Apply16(const F16& function,
                                           const std::vector<float>& inputs) {
  std::vector<float> outputs(inputs.size());
  for (size_t i = 0; i < inputs.size(); i += 16) {
    alignas(64) float lanes[16];
    for (size_t k = 0; k < 16; ++k)
      lanes[k] = i + k < inputs.size() ? inputs[i + k] : 1.0f;
    _mm512_store_ps(lanes, function(_mm512_load_ps(lanes)));
    for (size_t k = 0; k < 16 && i + k < inputs.size(); ++k)
      outputs[i + k] = lanes[k];
  }
  return outputs;
}

KINDLING_AVX512 std::vector<float> ApplyGelu16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return Gelu16(x); }, inputs);
}
KINDLING_AVX512 std::vector<float> ApplyGeluSlope16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return GeluSlope16(x); },
                 inputs);
}
KINDLING_AVX512 std::vector<float> ApplyExp16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return Exp16(x); }, inputs);
}
KINDLING_AVX512 std::vector<float> ApplyLog16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return Log16(x); }, inputs);
}
KINDLING_AVX512 std::vector<float> ApplyTanh16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return Tanh16(x); }, inputs);
}
KINDLING_AVX512 std::vector<float> ApplySigmoid16(
    const std::vector<float>& inputs) {
  return Apply16([](__m512 x) KINDLING_AVX512 { return Sigmoid16(x); }, inputs);
}
KINDLING_AVX512_END

// Every 4099th bit pattern of both signs within [low, high] (NaNs skipped).
std::vector<float> SampleRange(float low, float high) {
  std::vector<float> values;
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (x >= low && x <= high) values.push_back(x);
  }
  return values;
}

// WorstUlp() is the largest ulp distance of function(x) from
// reference(x) rounded to float over `inputs`; it also checks that results
// the reference calls 0, infinite or NaN are exactly that.
int64_t WorstUlp(__m256 (*function)(__m256),
                 const std::function<double(double)>& reference,
                 const std::vector<float>& inputs) {
  const std::vector<float> actual = Apply(function, inputs);
  int64_t worst = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const float expected = static_cast<float>(reference(inputs[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(actual[i])) << inputs[i];
      continue;
    }
    if (expected == 0 || std::isinf(expected)) {
      EXPECT_EQ(expected, actual[i]) << inputs[i];
      continue;
    }
    const int64_t distance = UlpDistance(expected, actual[i]);
    EXPECT_LE(distance, 64) << "x = " << inputs[i] << " expected " << expected
                            << " got " << actual[i];
    worst = std::max(worst, distance);
  }
  std::printf("worst error: %lld ulp over %zu inputs\n",
              static_cast<long long>(worst), inputs.size());
  return worst;
}

double ExpReference(double x) { return std::exp(x); }
double LogReference(double x) { return std::log(x); }
double TanhReference(double x) { return std::tanh(x); }
double SigmoidReference(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double GeluReference(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

TEST(FirstLanes16Test, CountsOutsideTheRegisterClamp) {
  EXPECT_EQ(0, FirstLanes16(-17));
  EXPECT_EQ(0, FirstLanes16(0));
  EXPECT_EQ(0x0001, FirstLanes16(1));
  EXPECT_EQ(0x7FFF, FirstLanes16(15));
  EXPECT_EQ(0xFFFF, FirstLanes16(16));
  EXPECT_EQ(0xFFFF, FirstLanes16(1000));
}

TEST(Exp8Test, WithinTwoUlpAcrossTheFloatRange) {
  EXPECT_LE(WorstUlp(Exp8, ExpReference, SampleRange(-kInf, kInf)), 2);
}

TEST(Exp8Test, SpecialValues) {
  EXPECT_EQ(1.0f, Apply(Exp8, 0.0f));
  EXPECT_EQ(0.0f, Apply(Exp8, -kInf));
  EXPECT_EQ(kInf, Apply(Exp8, kInf));
  EXPECT_TRUE(std::isnan(Apply(Exp8, kNan)));
  EXPECT_EQ(kInf, Apply(Exp8, 89.0f));
  EXPECT_EQ(0.0f, Apply(Exp8, -200.0f));
  // Subnormal results: e^-100 = 3.72e-44.
  EXPECT_LE(
      UlpDistance(static_cast<float>(std::exp(-100.0)), Apply(Exp8, -100.0f)),
      1);
}

TEST(Log8Test, WithinTwoUlpOnPositiveFloats) {
  // Includes the subnormals and the largest finite floats.
  EXPECT_LE(WorstUlp(Log8, LogReference, SampleRange(0.0f, kInf)), 2);
}

TEST(Log8Test, SpecialValues) {
  EXPECT_EQ(0.0f, Apply(Log8, 1.0f));
  EXPECT_EQ(-kInf, Apply(Log8, 0.0f));
  EXPECT_EQ(-kInf, Apply(Log8, -0.0f));
  EXPECT_EQ(kInf, Apply(Log8, kInf));
  EXPECT_TRUE(std::isnan(Apply(Log8, -1.0f)));
  EXPECT_TRUE(std::isnan(Apply(Log8, -kInf)));
  EXPECT_TRUE(std::isnan(Apply(Log8, kNan)));
  const float smallest = std::numeric_limits<float>::denorm_min();
  EXPECT_LE(UlpDistance(static_cast<float>(std::log(double{smallest})),
                        Apply(Log8, smallest)),
            1);
}

TEST(Tanh8Test, WithinTwoUlpAcrossTheFloatRange) {
  EXPECT_LE(WorstUlp(Tanh8, TanhReference, SampleRange(-kInf, kInf)), 2);
}

TEST(Tanh8Test, SpecialValues) {
  EXPECT_EQ(0.0f, Apply(Tanh8, 0.0f));
  EXPECT_EQ(1.0f, Apply(Tanh8, kInf));
  EXPECT_EQ(-1.0f, Apply(Tanh8, -kInf));
  EXPECT_EQ(-1.0f, Apply(Tanh8, -30.0f));
  EXPECT_TRUE(std::isnan(Apply(Tanh8, kNan)));
  // Odd: tanh(-x) = -tanh(x) bit for bit.
  for (float x : {0.1f, 0.6f, 0.7f, 3.0f}) {
    EXPECT_EQ(-Apply(Tanh8, x), Apply(Tanh8, -x)) << x;
  }
}

TEST(Sigmoid8Test, WithinThreeUlpWhereTheResultIsNormal) {
  // Below -87.3 the result is subnormal and Sigmoid8 flushes to 0 at -88.7.
  EXPECT_LE(WorstUlp(Sigmoid8, SigmoidReference, SampleRange(-87.0f, kInf)), 3);
}

TEST(Sigmoid8Test, SpecialValues) {
  EXPECT_EQ(0.5f, Apply(Sigmoid8, 0.0f));
  EXPECT_EQ(1.0f, Apply(Sigmoid8, kInf));
  EXPECT_EQ(0.0f, Apply(Sigmoid8, -kInf));
  EXPECT_EQ(0.0f, Apply(Sigmoid8, -100.0f));
  EXPECT_TRUE(std::isnan(Apply(Sigmoid8, kNan)));
}

TEST(Gelu8Test, WithinEightUlpAboveMinusNine) {
  EXPECT_LE(WorstUlp(Gelu8, GeluReference, SampleRange(-9.0f, kInf)), 8);
}

TEST(Gelu8Test, WithinTenUlpInTheFarNegativeTail) {
  // Phi(x) is 1e-45..1e-19 here; 1 + erf would have cancelled to nothing.
  EXPECT_LE(WorstUlp(Gelu8, GeluReference, SampleRange(-14.0f, -9.0f)), 10);
}

TEST(Gelu8Test, TinyNegativeTailIsAccurateThenZero) {
  // Here 1 + erf(x / sqrt 2) would have cancelled to nothing; -14 gives a
  // subnormal, -20 underflows.
  for (float x : {-5.0f, -7.5f, -10.0f, -12.0f}) {
    const double expected = GeluReference(x);
    EXPECT_NEAR(expected, Apply(Gelu8, x), 1e-5 * std::fabs(expected)) << x;
  }
  EXPECT_EQ(0.0f, Apply(Gelu8, -20.0f));
  EXPECT_EQ(0.0f, Apply(Gelu8, -1e30f));
}

TEST(Gelu8Test, SpecialValues) {
  EXPECT_EQ(0.0f, Apply(Gelu8, 0.0f));
  EXPECT_EQ(kInf, Apply(Gelu8, kInf));
  EXPECT_EQ(1e30f, Apply(Gelu8, 1e30f));
  EXPECT_TRUE(std::isnan(Apply(Gelu8, kNan)));
}

// GeluSlope8's terms in double: Phi(x) and x phi(x), which sum to the slope.
std::pair<double, double> GeluSlopeTerms(double x) {
  const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
  const double density =
      std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
  return {cdf, x * density};
}

TEST(GeluSlope8Test, WithinFiveUlpOfItsTermsEverywhere) {
  // The two terms cancel near the root at x = -0.75 (and for large
  // negative x), so the error is measured against their size: the float
  // rounding of Phi and of x phi alone is already half an ulp each.
  const std::vector<float> inputs = SampleRange(-kInf, kInf);
  const std::vector<float> actual = Apply(GeluSlope8, inputs);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto [cdf, product] = GeluSlopeTerms(inputs[i]);
    // In units of the float ulp at the terms' size (the subnormals' fixed
    // spacing where the terms underflow).
    const double scale = std::max<double>(std::fabs(cdf) + std::fabs(product),
                                          std::numeric_limits<float>::min());
    const double ulps = std::fabs(actual[i] - (cdf + product)) /
                        (scale * std::numeric_limits<float>::epsilon());
    if (ulps > worst) {
      worst = ulps;
      worst_x = inputs[i];
    }
  }
  std::printf("worst error: %.2f ulp of the terms at x = %g over %zu inputs\n",
              worst, worst_x, inputs.size());
  EXPECT_LE(worst, 5.0);
}

TEST(GeluSlope8Test, SpecialValues) {
  EXPECT_EQ(0.5f, Apply(GeluSlope8, 0.0f));
  EXPECT_EQ(1.0f, Apply(GeluSlope8, kInf));
  EXPECT_EQ(0.0f, Apply(GeluSlope8, -kInf));
  EXPECT_EQ(1.0f, Apply(GeluSlope8, 1e30f));
  EXPECT_EQ(0.0f, Apply(GeluSlope8, -1e30f));
  EXPECT_EQ(0.0f, Apply(GeluSlope8, -20.0f));
  EXPECT_TRUE(std::isnan(Apply(GeluSlope8, kNan)));
  // The slope's minimum, at x = -sqrt(2).
  EXPECT_NEAR(-0.128904145, Apply(GeluSlope8, -std::sqrt(2.0f)), 1e-6);
}

// ExpectSameBits() checks that a sixteen-lane function gives its eight-lane
// twin's bits on every 4099th float and on edge values, so the eight-lane
// function's accuracy bounds cover it.
void ExpectSameBits(__m256 (*f8)(__m256),
                    std::vector<float> (*f16)(const std::vector<float>&),
                    std::vector<float> edges) {
  std::vector<float> inputs = SampleRange(-kInf, kInf);
  for (float x : {0.0f, -0.0f, kInf, -kInf, kNan, 1e-45f, -1e-45f})
    inputs.push_back(x);
  inputs.insert(inputs.end(), edges.begin(), edges.end());
  const std::vector<float> expected = Apply(f8, inputs);
  const std::vector<float> actual = f16(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(expected[i]),
              std::bit_cast<uint32_t>(actual[i]))
        << "x = " << inputs[i];
  }
}

// The AVX-512 twins of Gelu8, Exp8, Log8, Sigmoid8 and Tanh8 must give their
// bits.
TEST(AvxFiveTwelveTest, Gelu16BitIdenticalToGelu8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  ExpectSameBits(Gelu8, ApplyGelu16, {13.0f, -13.5f, -20.0f});
}

TEST(AvxFiveTwelveTest, GeluSlope16BitIdenticalToGeluSlope8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  ExpectSameBits(GeluSlope8, ApplyGeluSlope16, {13.0f, -13.5f, -20.0f, 25.0f});
}

TEST(AvxFiveTwelveTest, Exp16BitIdenticalToExp8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  // Both sides of the fast path's bound and of the overflow/underflow.
  ExpectSameBits(Exp8, ApplyExp16,
                 {86.0f, -86.0f, 86.00001f, -86.00001f, 88.72f, 88.73f, -103.9f,
                  -104.0f, -150.0f, 1e-8f, -1e-8f});
}

TEST(AvxFiveTwelveTest, Log16BitIdenticalToLog8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  // Zero, negatives, subnormals, the sqrt(2) split, infinity and NaN.
  ExpectSameBits(Log8, ApplyLog16,
                 {0.0f, -0.0f, -1.0f, 1e-45f, 1e-40f, 1.17549435e-38f,
                  1.41421356f, 1.41421366f, 1.0f, kInf, -kInf, kNan});
}

TEST(AvxFiveTwelveTest, Sigmoid16BitIdenticalToSigmoid8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  ExpectSameBits(Sigmoid8, ApplySigmoid16,
                 {86.0f, -86.0f, 86.5f, -86.5f, 104.0f, -104.0f, 17.0f});
}

TEST(AvxFiveTwelveTest, Tanh16BitIdenticalToTanh8) {
  if (!HasAvx512())
    GTEST_SKIP()
        << "no AVX-512F here (the CPU lacks it or KINDLING_MAX_CPU_ISA=AVX2)";
  // Both sides of the polynomial's bound (0.625) and of exp's fast path
  // (2|x| = 86), and the saturation.
  ExpectSameBits(Tanh8, ApplyTanh16,
                 {0.625f, -0.625f, 0.62499994f, -0.62499994f, 43.0f, -43.0f,
                  43.5f, -43.5f, 60.0f});
}

TEST(VectorMathTest, PartialLoadsAndStoresTouchOnlyTheirLanes) {
  const float source[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float target[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  StorePartial(target, 3, LoadPartial(source, 5, -1.0f));
  EXPECT_EQ((std::vector<float>{1, 2, 3, 0, 0, 0, 0, 0}),
            std::vector<float>(target, target + 8));
  float lanes[8];
  _mm256_storeu_ps(lanes, LoadPartial(source, 5, -1.0f));
  EXPECT_EQ((std::vector<float>{1, 2, 3, 4, 5, -1, -1, -1}),
            std::vector<float>(lanes, lanes + 8));
  EXPECT_EQ(8.0f, Max8(_mm256_loadu_ps(source)));
  EXPECT_EQ(1.0f, Min8(_mm256_loadu_ps(source)));
  EXPECT_EQ(36.0,
            Sum4d(AddWidened(_mm256_setzero_pd(), _mm256_loadu_ps(source))));
}

}  // namespace
}  // namespace kindling::cpu
