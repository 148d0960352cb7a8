// VectorExp against the correctly rounded e^x (double exp, rounded to float).
#include "kindling/backend/cpu/vector_math.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

int UlpDistance(float a, float b) {
  return std::abs(std::bit_cast<int32_t>(a) - std::bit_cast<int32_t>(b));
}

TEST(VectorExpTest, WithinTwoUlpAcrossTheFloatRange) {
  int worst = 0;
  // Every 4099th bit pattern of both signs: about a million values.
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(x)) continue;
    const float expected = static_cast<float>(std::exp(static_cast<double>(x)));
    const float actual = VectorExp(x);
    if (expected == 0 || std::isinf(expected)) {
      ASSERT_EQ(expected, actual) << x;
      continue;
    }
    worst = std::max(worst, UlpDistance(expected, actual));
    ASSERT_LE(UlpDistance(expected, actual), 2) << x;
  }
  EXPECT_LE(worst, 2);
}

TEST(VectorExpTest, SpecialValues) {
  EXPECT_EQ(1.0f, VectorExp(0.0f));
  EXPECT_EQ(0.0f, VectorExp(-std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(std::isinf(VectorExp(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(VectorExp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(VectorExp(89.0f)));
  EXPECT_EQ(0.0f, VectorExp(-200.0f));
  // Subnormal results: e^-100 = 3.72e-44.
  EXPECT_LE(
      UlpDistance(static_cast<float>(std::exp(-100.0)), VectorExp(-100.0f)), 1);
}

}  // namespace
}  // namespace kindling::cpu
