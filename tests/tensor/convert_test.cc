// dtype conversion through tensors: round trips, rounding, NaN/Inf, ints.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<uint16_t> Bits(const Tensor<1>& t) {
  std::vector<uint16_t> bits(t.numel());
  t.contiguous().base().CopyToHost(bits.data());
  return bits;
}

TEST(ConvertTest, F32ToF16MatchesScalarReferenceBitForBit) {
  // Enough values to cross the vector (F16C) path and its scalar tail.
  std::vector<float> values{0.0f,
                            -0.0f,
                            1.0f,
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            1e10f,
                            -1e10f,
                            kInf,
                            -kInf,
                            kNan,
                            0x1p-24f,
                            0x1p-25f,
                            0x1.8p-24f,
                            0x1.ffcp-15f,
                            1.0f + 0x1p-11f,
                            1.0f + 3 * 0x1p-11f,
                            1.0f / 3,
                            std::bit_cast<float>(0x7f800001u)};
  Generator generator(1);
  for (int i = 0; i < 1000; ++i) {
    values.push_back(static_cast<float>((generator.NextUniform() - 0.5) * 1e5));
  }
  const auto t =
      Tensor<1>::FromData(values, {static_cast<int64_t>(values.size())});
  const auto bits = Bits(t.to(DType::kF16));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(FloatToHalfBits(values[i]), bits[i]) << values[i];
  }
  const auto back = t.to(DType::kF16).to(DType::kF32).to_data<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    const float expected = HalfBitsToFloat(FloatToHalfBits(values[i]));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(back[i]));
    } else {
      EXPECT_EQ(expected, back[i]);
    }
  }
}

TEST(ConvertTest, F32ToBF16MatchesScalarReference) {
  const std::vector<float> values{
      1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -kInf, kNan, 3.14159f, 1e38f};
  const auto t = Tensor<1>::FromData(values, {7});
  const auto bits = Bits(t.to(DType::kBF16));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(FloatToBFloat16Bits(values[i]), bits[i]) << values[i];
  }
}

TEST(ConvertTest, F64ToF16RoundsOnce) {
  const auto t = Tensor<1>::FromData<double>({1.0 + 0x1p-11 + 0x1p-40}, {1});
  EXPECT_EQ(0x3c01, Bits(t.to(DType::kF16))[0]);
}

TEST(ConvertTest, F16ToBF16AndF64RoundTrip) {
  const auto t = Tensor<1>::FromData<float>({0.5f, -1024.0f, 3.0f}, {3});
  const auto path = t.to(DType::kF16).to(DType::kBF16).to(DType::kF64);
  EXPECT_EQ((std::vector<double>{0.5, -1024, 3}), path.to_data<double>());
}

TEST(ConvertTest, FloatToIntTruncatesSaturatesAndMapsNanToZero) {
  const auto t = Tensor<1>::FromData<float>(
      {2.7f, -2.7f, kNan, kInf, -kInf, 3e9f, -3e9f, 300.0f}, {8});
  EXPECT_EQ((std::vector<int32_t>{2, -2, 0, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 300}),
            t.to_kind<Int>(DType::kI32).to_data<int32_t>());
  EXPECT_EQ((std::vector<uint8_t>{2, 0, 0, 255, 0, 255, 0, 255}),
            t.to_kind<Int>(DType::kU8).to_data<uint8_t>());
}

TEST(ConvertTest, IntegersAndBools) {
  const auto i = Tensor<1, Int>::FromData<int64_t>({0, 1, -1, 257}, {4});
  EXPECT_EQ((std::vector<bool>{false, true, true, true}),
            i.to_kind<Bool>().to_data<bool>());
  EXPECT_EQ((std::vector<uint8_t>{0, 1, 255, 1}),
            i.to(DType::kU8).to_data<uint8_t>());  // wraps like NumPy
  EXPECT_EQ((std::vector<float>{0, 1, -1, 257}),
            i.to_kind<Float>().to_data<float>());
  const auto b = Tensor<1, Bool>::FromData<bool>({true, false}, {2});
  EXPECT_EQ((std::vector<float>{1, 0}), b.to_kind<Float>().to_data<float>());
}

TEST(ConvertTest, ConvertingNonContiguousInput) {
  const auto t = Tensor<1>::Arange(0, 6).reshape<2>({2, 3}).t();
  EXPECT_EQ((std::vector<double>{0, 3, 1, 4, 2, 5}),
            t.to(DType::kF64).to_data<double>());
}

// Every f16 and bf16 bit pattern, widened by the contiguous (vectorized)
// kernel and by the strided (scalar) one: both equal the reference in
// half.h bit for bit, signalling NaNs included.
TEST(ConvertTest, EverySixteenBitPatternWidensTheSameContiguousOrStrided) {
  std::vector<Half> halves(65536);
  std::vector<BFloat16> bfloats(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    halves[bits] = Half::FromBits(static_cast<uint16_t>(bits));
    bfloats[bits] = BFloat16::FromBits(static_cast<uint16_t>(bits));
  }
  const auto f16 = Tensor<2>::FromData(halves, {256, 256});
  const auto bf16 = Tensor<2>::FromData(bfloats, {256, 256});
  auto widen = [](const Tensor<2>& t) {
    std::vector<uint32_t> bits(t.numel());
    t.to(DType::kF32).contiguous().base().CopyToHost(bits.data());
    return bits;
  };
  const auto f16_contiguous = widen(f16);
  const auto f16_strided = widen(f16.t().t().t());  // element (i, j) at [j, i]
  const auto bf16_contiguous = widen(bf16);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint32_t transposed = (bits % 256) * 256 + bits / 256;
    ASSERT_EQ(std::bit_cast<uint32_t>(HalfBitsToFloat(bits)),
              f16_contiguous[bits])
        << std::hex << bits;
    ASSERT_EQ(f16_contiguous[bits], f16_strided[transposed])
        << std::hex << bits;
    ASSERT_EQ(std::bit_cast<uint32_t>(BFloat16BitsToFloat(bits)),
              bf16_contiguous[bits])
        << std::hex << bits;
  }
}

TEST(ConvertTest, F32ToBF16VectorAndTailMatchTheScalarReference) {
  // 1003 values: vectors of 8 and a 3-element scalar tail.
  std::vector<float> values{kNan,
                            -kInf,
                            std::bit_cast<float>(0x7f800001u),
                            std::bit_cast<float>(0x3f808000u),   // tie, even
                            std::bit_cast<float>(0x3f818000u),   // tie, odd
                            std::bit_cast<float>(0x7f7fffffu)};  // to inf
  Generator generator(2);
  while (values.size() < 1003) {
    values.push_back(static_cast<float>((generator.NextUniform() - 0.5) * 1e6));
  }
  const auto t =
      Tensor<1>::FromData(values, {static_cast<int64_t>(values.size())});
  const auto bits = Bits(t.to(DType::kBF16));
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(FloatToBFloat16Bits(values[i]), bits[i]) << i;
  }
}

TEST(ConvertTest, SameDTypeIsFree) {
  const auto t = Tensor<1>::Ones({4});
  EXPECT_TRUE(t.to(DType::kF32).shares_storage_with(t));
}

}  // namespace
}  // namespace kindling
