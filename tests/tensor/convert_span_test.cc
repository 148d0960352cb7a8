// ConvertFloatSpan() (the vectorized F16C/AVX2 paths and their scalar tails)
// against the scalar reference in half.h, bit for bit.
#include "kindling/tensor/convert_span.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/half.h"

namespace kindling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Spans are converted at these byte offsets from an aligned buffer: 0 for
// the aligned case, odd ones because checkpoint bytes may sit anywhere.
constexpr size_t kOffsets[] = {0, 1, 3};

// Converts `in` (elements of `in_dtype`, raw bytes) starting `offset` bytes
// into both buffers, so neither span is aligned when offset is odd.
template <class Out, class In>
std::vector<Out> Convert(DType out_dtype, const std::vector<In>& in,
                         DType in_dtype, size_t offset) {
  std::vector<char> in_bytes(offset + in.size() * sizeof(In));
  std::memcpy(in_bytes.data() + offset, in.data(), in.size() * sizeof(In));
  std::vector<char> out_bytes(offset + in.size() * sizeof(Out));
  ConvertFloatSpan(out_bytes.data() + offset, out_dtype,
                   in_bytes.data() + offset, in_dtype, in.size());
  std::vector<Out> out(in.size());
  std::memcpy(out.data(), out_bytes.data() + offset, out.size() * sizeof(Out));
  return out;
}

std::vector<uint16_t> AllSixteenBitPatterns() {
  std::vector<uint16_t> patterns(65536);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    patterns[bits] = static_cast<uint16_t>(bits);
  }
  return patterns;
}

// Floats that exercise the rounding of f32 -> f16: every f16 value and the
// floats one ulp either side of it, the exact midpoints between neighbouring
// f16 values (ties) and one ulp either side of those, plus infinities, NaNs
// with payloads, float subnormals and values far beyond the f16 range.
std::vector<float> HalfRoundingCases() {
  std::vector<float> values;
  auto near = [&values](float value) {
    values.push_back(value);
    values.push_back(std::nextafter(value, kInf));
    values.push_back(std::nextafter(value, -kInf));
  };
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const float value = HalfBitsToFloat(static_cast<uint16_t>(bits));
    const float next = HalfBitsToFloat(static_cast<uint16_t>(bits + 1));
    for (const float sign : {1.0f, -1.0f}) {
      near(sign * value);
      near(sign * (value + (next - value) / 2));  // exact in float
    }
  }
  for (const uint32_t bits :
       {0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fc00000u, 0xffc00001u,
        0x7fa5a5a5u, 0xff812345u, 0x7fffffffu, 0x00000001u, 0x80000001u,
        0x007fffffu, 0x7f7fffffu, 0xff7fffffu, 0x477fe000u, 0x477ff000u,
        0x33000000u, 0x33000001u, 0x337fffffu}) {
    values.push_back(std::bit_cast<float>(bits));
  }
  return values;
}

// Every 65521st float bit pattern (65521 is prime, so the low mantissa bits
// vary too): 65550 patterns across all exponents, signs and NaN payloads.
std::vector<float> SampledFloatPatterns() {
  std::vector<float> values;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65521) {
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  }
  return values;
}

TEST(ConvertFloatSpanTest, EveryHalfPatternWidensLikeTheScalarReference) {
  const std::vector<uint16_t> halves = AllSixteenBitPatterns();
  for (const size_t offset : kOffsets) {
    const auto floats =
        Convert<float>(DType::kF32, halves, DType::kF16, offset);
    for (size_t i = 0; i < halves.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(HalfBitsToFloat(halves[i])),
                std::bit_cast<uint32_t>(floats[i]))
          << "f16 0x" << std::hex << halves[i] << " offset " << offset;
    }
  }
}

TEST(ConvertFloatSpanTest, EveryBFloat16PatternWidensLikeTheScalarReference) {
  const std::vector<uint16_t> bfloats = AllSixteenBitPatterns();
  for (const size_t offset : kOffsets) {
    const auto floats =
        Convert<float>(DType::kF32, bfloats, DType::kBF16, offset);
    for (size_t i = 0; i < bfloats.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(BFloat16BitsToFloat(bfloats[i])),
                std::bit_cast<uint32_t>(floats[i]))
          << "bf16 0x" << std::hex << bfloats[i] << " offset " << offset;
    }
  }
}

TEST(ConvertFloatSpanTest, FloatToHalfRoundsLikeTheScalarReference) {
  for (const std::vector<float>& values :
       {HalfRoundingCases(), SampledFloatPatterns()}) {
    for (const size_t offset : kOffsets) {
      const auto halves =
          Convert<uint16_t>(DType::kF16, values, DType::kF32, offset);
      for (size_t i = 0; i < values.size(); ++i) {
        ASSERT_EQ(FloatToHalfBits(values[i]), halves[i])
            << "f32 0x" << std::hex << std::bit_cast<uint32_t>(values[i])
            << " offset " << offset;
      }
    }
  }
}

TEST(ConvertFloatSpanTest, FloatToBFloat16RoundsLikeTheScalarReference) {
  std::vector<float> values = SampledFloatPatterns();
  // Ties and their neighbours around every bfloat16 with a small exponent
  // range, and the overflow edge.
  for (uint32_t top = 0x3f00; top < 0x4100; ++top) {
    const uint32_t tie = (top << 16) | 0x8000u;
    for (const uint32_t bits : {tie - 1, tie, tie + 1, top << 16}) {
      values.push_back(std::bit_cast<float>(bits));
      values.push_back(std::bit_cast<float>(bits | 0x80000000u));
    }
  }
  for (const uint32_t bits : {0x7f7f8000u, 0x7f7fffffu, 0x7f800001u,
                              0xffc00000u, 0x7fbfffffu, 0x00008000u}) {
    values.push_back(std::bit_cast<float>(bits));
  }
  for (const size_t offset : kOffsets) {
    const auto bfloats =
        Convert<uint16_t>(DType::kBF16, values, DType::kF32, offset);
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(FloatToBFloat16Bits(values[i]), bfloats[i])
          << "f32 0x" << std::hex << std::bit_cast<uint32_t>(values[i])
          << " offset " << offset;
    }
  }
}

TEST(ConvertFloatSpanTest, NanPayloadStaysANan) {
  // Signalling NaNs with payloads only in the low bits (which a 16-bit
  // format drops) must come out as NaNs, not infinities.
  const std::vector<float> nans(
      19, std::bit_cast<float>(0xff800001u));  // > one vector plus a tail
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    const auto narrow = Convert<uint16_t>(dtype, nans, DType::kF32, 0);
    for (const uint16_t bits : narrow) {
      const float widened = dtype == DType::kF16 ? HalfBitsToFloat(bits)
                                                 : BFloat16BitsToFloat(bits);
      EXPECT_TRUE(std::isnan(widened)) << std::hex << bits;
      EXPECT_TRUE(std::signbit(widened)) << std::hex << bits;
    }
  }
}

TEST(ConvertFloatSpanTest, OverflowGoesToInfinityAndSubnormalsTieToEven) {
  const std::vector<float> values{
      65504.0f,     65519.0f,  65520.0f,        -65520.0f,
      1e10f,        0x1p-24f,  0x1p-25f,        0x1.8p-24f,
      0x1.ffcp-15f, -0x1p-25f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  const std::vector<uint16_t> expected{0x7bff, 0x7bff, 0x7c00, 0xfc00,
                                       0x7c00, 0x0001, 0x0000, 0x0002,
                                       0x0400, 0x8000, 0x3c00, 0x3c02};
  EXPECT_EQ(expected, Convert<uint16_t>(DType::kF16, values, DType::kF32, 0));
}

// ReferenceToDouble() / the Reference...() narrowings are the scalar
// definitions every pair must match.
double ReferenceToDouble(const char* element, DType dtype) {
  uint16_t bits;
  switch (dtype) {
    case DType::kF16:
      std::memcpy(&bits, element, 2);
      return HalfBitsToFloat(bits);
    case DType::kBF16:
      std::memcpy(&bits, element, 2);
      return BFloat16BitsToFloat(bits);
    case DType::kF32: {
      float value;
      std::memcpy(&value, element, 4);
      return value;
    }
    default: {
      double value;
      std::memcpy(&value, element, 8);
      return value;
    }
  }
}

// The reference for a 16-bit or f32 source narrows from float (exact), for
// an f64 source from double (rounded once).
void ReferenceStore(char* element, DType dtype, double value,
                    bool from_double) {
  const float narrow = static_cast<float>(value);
  uint16_t bits;
  switch (dtype) {
    case DType::kF16:
      bits = from_double ? DoubleToHalfBits(value) : FloatToHalfBits(narrow);
      std::memcpy(element, &bits, 2);
      return;
    case DType::kBF16:
      bits = from_double ? DoubleToBFloat16Bits(value)
                         : FloatToBFloat16Bits(narrow);
      std::memcpy(element, &bits, 2);
      return;
    case DType::kF32:
      std::memcpy(element, &narrow, 4);
      return;
    default:
      std::memcpy(element, &value, 8);
      return;
  }
}

TEST(ConvertFloatSpanTest, EveryPairMatchesTheScalarReference) {
  // Doubles that round differently when narrowed twice, ties, NaN, inf,
  // and enough of them (3000) to cross the 1024-element staging chunks.
  std::vector<double> seeds{0.0,
                            -0.0,
                            1.0 + 0x1p-11 + 0x1p-40,
                            1.0 + 0x1p-8 + 0x1p-40,
                            1.0 + 0x1p-11,
                            65520.0 - 0x1p-30,
                            1e300,
                            -1e-300,
                            std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(),
                            0x1p-24 * 1.5,
                            3.0e38,
                            std::numeric_limits<double>::denorm_min()};
  for (int i = 0; seeds.size() < 3000; ++i) {
    seeds.push_back(std::ldexp(1.0 + i * 0x1.3p-13, i % 60 - 30) *
                    (i % 2 ? -1 : 1));
  }
  const DType dtypes[] = {DType::kF16, DType::kBF16, DType::kF32, DType::kF64};
  for (const DType from : dtypes) {
    // The source span holds the seeds rounded into `from`.
    const size_t from_size = DTypeSize(from);
    std::vector<char> source(seeds.size() * from_size + 1);
    char* in = source.data() + 1;  // unaligned
    for (size_t i = 0; i < seeds.size(); ++i) {
      ReferenceStore(in + i * from_size, from, seeds[i], /*from_double=*/true);
    }
    for (const DType to : dtypes) {
      const size_t to_size = DTypeSize(to);
      std::vector<char> actual(seeds.size() * to_size);
      std::vector<char> expected(seeds.size() * to_size);
      ConvertFloatSpan(actual.data(), to, in, from, seeds.size());
      for (size_t i = 0; i < seeds.size(); ++i) {
        ReferenceStore(expected.data() + i * to_size, to,
                       ReferenceToDouble(in + i * from_size, from),
                       /*from_double=*/from == DType::kF64);
      }
      for (size_t i = 0; i < seeds.size(); ++i) {
        // A NaN only has to stay a NaN here: the reference's detour through
        // double quiets signalling NaNs that the direct route keeps (the
        // 16-bit tests above pin NaN bits exactly).
        const double a = ReferenceToDouble(actual.data() + i * to_size, to);
        const double e = ReferenceToDouble(expected.data() + i * to_size, to);
        if (std::isnan(e)) {
          ASSERT_TRUE(std::isnan(a))
              << DTypeName(from) << " -> " << DTypeName(to) << " element " << i;
          continue;
        }
        ASSERT_EQ(0, std::memcmp(actual.data() + i * to_size,
                                 expected.data() + i * to_size, to_size))
            << DTypeName(from) << " -> " << DTypeName(to) << " element " << i
            << ": " << seeds[i];
      }
    }
  }
}

TEST(ConvertFloatSpanTest, EmptySpanWritesNothing) {
  uint16_t out = 0xabcd;
  const float in = 1.0f;
  ConvertFloatSpan(&out, DType::kF16, &in, DType::kF32, 0);
  EXPECT_EQ(0xabcd, out);
}

TEST(ConvertFloatSpanDeathTest, NonFloatingDTypeAborts) {
  int32_t out = 0;
  const float in = 1.0f;
  EXPECT_DEATH(ConvertFloatSpan(&out, DType::kI32, &in, DType::kF32, 1),
               "f32 -> i32 is not a floating conversion");
}

}  // namespace
}  // namespace kindling
