// The CUDA kernels' element conversions (device_element.h), run on the host:
// they must agree bit for bit with half.h and the CPU backend's Convert.
#include "kindling/backend/cuda/device_element.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/element.h"
#include "kindling/tensor/half.h"

namespace kindling {
namespace {

uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(DeviceElementTest, HalfToFloatMatchesHalfHForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    ASSERT_EQ(BitsOf(HalfBitsToFloat(half)), BitsOf(cuda::HalfToFloat(half)))
        << "half 0x" << std::hex << bits;
    ASSERT_EQ(BitsOf(BFloat16BitsToFloat(half)),
              BitsOf(cuda::BFloat16ToFloat(half)))
        << "bfloat16 0x" << std::hex << bits;
  }
}

TEST(DeviceElementTest, FloatToHalfMatchesHalfHOnRandomAndEdgeBits) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    ASSERT_EQ(FloatToHalfBits(value), cuda::FloatToHalf(value))
        << "float bits 0x" << std::hex << bits;
    ASSERT_EQ(FloatToBFloat16Bits(value), cuda::FloatToBFloat16(value))
        << "float bits 0x" << std::hex << bits;
  }
  for (float value :
       {0.0f, -0.0f, 65504.0f, 65520.0f, 65519.99f, 0x1p-24f, 0x1p-25f,
        0x1.8p-25f, 0x1p-14f, std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_EQ(FloatToHalfBits(value), cuda::FloatToHalf(value)) << value;
    EXPECT_EQ(FloatToBFloat16Bits(value), cuda::FloatToBFloat16(value))
        << value;
  }
}

TEST(DeviceElementTest, DoubleRoundsOnceToHalfLikeHalfH) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> scale(-30, 17);
  for (int i = 0; i < 500000; ++i) {
    const double value = std::ldexp(static_cast<double>(rng()) * 0x1p-64,
                                    scale(rng) > 0 ? 5 : -5) *
                         std::exp2(scale(rng)) * ((rng() & 1) ? -1 : 1);
    ASSERT_EQ(DoubleToHalfBits(value),
              cuda::FloatToHalf(cuda::DoubleToFloatOdd(value)))
        << value;
    ASSERT_EQ(DoubleToBFloat16Bits(value),
              cuda::FloatToBFloat16(cuda::DoubleToFloatOdd(value)))
        << value;
  }
  for (double value :
       {1e300, -1e300, 1e-300, -1e-300, 65520.0, 65519.999999, 0.0, -0.0}) {
    EXPECT_EQ(BitsOf(DoubleToFloatRoundToOdd(value)),
              BitsOf(cuda::DoubleToFloatOdd(value)))
        << value;
  }
}

template <class To, class From>
void ExpectSameConversion(From value) {
  const To cpu_value = cpu::Convert<To>(value);
  const To cuda_value = cuda::Convert<To>(value);
  EXPECT_EQ(0, std::memcmp(&cpu_value, &cuda_value, sizeof(To)))
      << "converting " << cpu::ToDouble(value);
}

TEST(DeviceElementTest, ConvertMatchesTheCpuBackend) {
  const double doubles[] = {0.0,
                            -0.0,
                            1.5,
                            -1.5,
                            2.5e9,
                            -2.5e9,
                            300.0,
                            -300.0,
                            1e30,
                            -1e30,
                            1e-40,
                            65519.0,
                            9.3e18,
                            -9.3e18,
                            std::nan(""),
                            std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity()};
  for (double value : doubles) {
    ExpectSameConversion<int64_t>(value);
    ExpectSameConversion<int32_t>(value);
    ExpectSameConversion<uint8_t>(value);
    ExpectSameConversion<bool>(value);
    ExpectSameConversion<float>(value);
    ExpectSameConversion<Half>(value);
    ExpectSameConversion<BFloat16>(value);
    const float as_float = static_cast<float>(value);
    ExpectSameConversion<int64_t>(as_float);
    ExpectSameConversion<int32_t>(as_float);
    ExpectSameConversion<uint8_t>(as_float);
    ExpectSameConversion<Half>(as_float);
  }
  for (int64_t value : {int64_t{0}, int64_t{-1}, int64_t{255}, int64_t{256},
                        int64_t{-129}, int64_t{1} << 40, int64_t{65520}}) {
    ExpectSameConversion<int32_t>(value);
    ExpectSameConversion<uint8_t>(value);
    ExpectSameConversion<bool>(value);
    ExpectSameConversion<Half>(value);
    ExpectSameConversion<BFloat16>(value);
    ExpectSameConversion<double>(value);
  }
  ExpectSameConversion<float>(Half{0x7e01});
  ExpectSameConversion<int32_t>(BFloat16{0xc2f7});
}

}  // namespace
}  // namespace kindling
