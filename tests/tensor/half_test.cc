// Bit-exact checks of the scalar f16/bf16 conversions against known patterns.
#include "kindling/tensor/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace kindling {
namespace {

TEST(HalfTest, ExactValues) {
  EXPECT_EQ(0x0000, FloatToHalfBits(0.0f));
  EXPECT_EQ(0x8000, FloatToHalfBits(-0.0f));
  EXPECT_EQ(0x3c00, FloatToHalfBits(1.0f));
  EXPECT_EQ(0xc000, FloatToHalfBits(-2.0f));
  EXPECT_EQ(0x3555, FloatToHalfBits(1.0f / 3.0f));
  EXPECT_EQ(0x7bff, FloatToHalfBits(65504.0f));  // largest finite half
}

TEST(HalfTest, OverflowRoundsToInfinityAtTheTie) {
  EXPECT_EQ(0x7bff, FloatToHalfBits(65519.0f));
  EXPECT_EQ(0x7c00, FloatToHalfBits(65520.0f));  // tie, 65504 is odd
  EXPECT_EQ(0x7c00, FloatToHalfBits(1e10f));
  EXPECT_EQ(0xfc00, FloatToHalfBits(-1e10f));
}

TEST(HalfTest, InfinityAndNanAreKept) {
  EXPECT_EQ(0x7c00, FloatToHalfBits(std::numeric_limits<float>::infinity()));
  EXPECT_EQ(0xfc00, FloatToHalfBits(-std::numeric_limits<float>::infinity()));
  const uint16_t nan = FloatToHalfBits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(0x7c00, nan & 0x7c00);
  EXPECT_NE(0, nan & 0x03ff);
  // A signalling NaN with only low payload bits stays a NaN (quieted).
  const float signalling = std::bit_cast<float>(0x7f800001u);
  EXPECT_EQ(0x7e00, FloatToHalfBits(signalling));
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7e00)));
  EXPECT_TRUE(std::isinf(HalfBitsToFloat(0x7c00)));
}

TEST(HalfTest, SubnormalsRoundToNearestEven) {
  EXPECT_EQ(0x0001, FloatToHalfBits(0x1p-24f));  // smallest subnormal
  EXPECT_EQ(0x0000, FloatToHalfBits(0x1p-25f));  // tie to even (0)
  EXPECT_EQ(0x0001, FloatToHalfBits(0x1.8p-25f));
  EXPECT_EQ(0x0002, FloatToHalfBits(0x1.8p-24f));  // 1.5 ulp: tie to 2
  EXPECT_EQ(0x0002, FloatToHalfBits(0x1p-23f));
  EXPECT_EQ(0x03ff, FloatToHalfBits(0x1.ff8p-15f));  // largest subnormal
  EXPECT_EQ(0x0400, FloatToHalfBits(0x1p-14f));      // smallest normal
  EXPECT_EQ(0x0400, FloatToHalfBits(0x1.ffcp-15f));  // rounds up into normal
  EXPECT_EQ(0x8001, FloatToHalfBits(-0x1p-24f));
}

TEST(HalfTest, NormalTiesGoToEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: stays 1 (even).
  EXPECT_EQ(0x3c00, FloatToHalfBits(1.0f + 0x1p-11f));
  // 1 + 3 * 2^-11 is halfway between odd 0x3c01 and even 0x3c02.
  EXPECT_EQ(0x3c02, FloatToHalfBits(1.0f + 3 * 0x1p-11f));
  // Just above the tie rounds up.
  EXPECT_EQ(0x3c01, FloatToHalfBits(1.0f + 0x1p-11f + 0x1p-20f));
}

TEST(HalfTest, EveryHalfRoundTripsExactly) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const float value = HalfBitsToFloat(half);
    if (std::isnan(value)) continue;
    EXPECT_EQ(half, FloatToHalfBits(value)) << std::hex << bits;
  }
}

TEST(HalfTest, HalfToFloatKnownValues) {
  EXPECT_EQ(65504.0f, HalfBitsToFloat(0x7bff));
  EXPECT_EQ(0x1p-24f, HalfBitsToFloat(0x0001));
  EXPECT_EQ(-2.0f, HalfBitsToFloat(0xc000));
  EXPECT_TRUE(std::signbit(HalfBitsToFloat(0x8000)));
}

TEST(BFloat16Test, KnownPatternsAndTies) {
  EXPECT_EQ(0x3f80, FloatToBFloat16Bits(1.0f));
  EXPECT_EQ(0xc000, FloatToBFloat16Bits(-2.0f));
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: stays even.
  EXPECT_EQ(0x3f80, FloatToBFloat16Bits(1.0f + 0x1p-8f));
  EXPECT_EQ(0x3f82, FloatToBFloat16Bits(1.0f + 3 * 0x1p-8f));
  EXPECT_EQ(0x3f81, FloatToBFloat16Bits(1.0f + 0x1p-8f + 0x1p-20f));
  EXPECT_EQ(0x7f80, FloatToBFloat16Bits(std::numeric_limits<float>::max()));
  EXPECT_EQ(0x7f80,
            FloatToBFloat16Bits(std::numeric_limits<float>::infinity()));
  const uint16_t nan =
      FloatToBFloat16Bits(std::bit_cast<float>(0x7f800001u));  // sNaN
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(nan)));
  EXPECT_EQ(1.0f, BFloat16BitsToFloat(0x3f80));
}

TEST(DoubleRoundingTest, DoubleToHalfRoundsOnce) {
  // Slightly above the tie 1 + 2^-11: a naive double -> float -> half would
  // first round to the tie (float has no bit for 2^-40) and then to even.
  const double just_above_tie = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(0x3c00, FloatToHalfBits(static_cast<float>(just_above_tie)));
  EXPECT_EQ(0x3c01, DoubleToHalfBits(just_above_tie));
  EXPECT_EQ(0x3c00, DoubleToHalfBits(1.0 + 0x1p-11));  // exact tie: even
  EXPECT_EQ(0x3f81, DoubleToBFloat16Bits(1.0 + 0x1p-8 + 0x1p-40));
  EXPECT_EQ(0x7c00, DoubleToHalfBits(1e300));
  EXPECT_EQ(0x7f80, DoubleToBFloat16Bits(1e300));
}

}  // namespace
}  // namespace kindling
