// Half and BFloat16: 16-bit floating-point elements and their exact
// conversions.
//
// Every conversion to a narrower format rounds to nearest, ties to even, the
// IEEE 754 default, and keeps infinities and NaNs (a NaN stays a quiet NaN
// with the top payload bits it had). These scalar functions are the reference
// the CPU backend's vector kernels are tested against, bit for bit.
//
//   kindling::FloatToHalfBits(65504.0f);   // 0x7bff, the largest half
//   kindling::FloatToHalfBits(65520.0f);   // 0x7c00, +inf (tie rounds up)
//   kindling::FloatToBFloat16Bits(1.0f);   // 0x3f80
//
// Conversions from double round once: the value is first narrowed to float
// with round-to-odd, which keeps enough information for the final
// round-to-nearest-even step to give the correctly rounded result.
#ifndef KINDLING_TENSOR_HALF_H_
#define KINDLING_TENSOR_HALF_H_

#include <bit>
#include <cmath>
#include <cstdint>

#include "kindling/tensor/dtype.h"

namespace kindling {

// FloatToHalfBits() is the IEEE binary16 pattern nearest to `value`.
constexpr uint16_t FloatToHalfBits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 is halfway between 65504 (odd mantissa) and 2^16: ties go to inf.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {    // below 2^-14: a half subnormal or zero
    if (magnitude < 0x33000000u) {  // below 2^-25, or exactly half of 2^-24
      return static_cast<uint16_t>(sign);
    }
    const uint32_t exponent = magnitude >> 23;  // 102..112
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // value / 2^-24 = mantissa >> shift
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) {
      ++result;  // may carry into the smallest normal, which is correct
    }
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round away 13 mantissa bits.
  uint32_t result = magnitude - 0x38000000u;
  const uint32_t remainder = result & 0x1fffu;
  result >>= 13;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

// HalfBitsToFloat() is the exact float value of a binary16 pattern.
constexpr float HalfBitsToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) {
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) |
                              (mantissa << 13));
}

// FloatToBFloat16Bits() is the bfloat16 pattern nearest to `value`.
constexpr uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// BFloat16BitsToFloat() is the exact float value of a bfloat16 pattern.
constexpr float BFloat16BitsToFloat(uint16_t bfloat16) {
  return std::bit_cast<float>(static_cast<uint32_t>(bfloat16) << 16);
}

// DoubleToFloatRoundToOdd() narrows `value` to float, truncating toward zero
// and setting the last mantissa bit when the result is inexact. A second
// rounding from this float to any format at least two bits narrower (half,
// bfloat16) then equals rounding `value` directly.
inline float DoubleToFloatRoundToOdd(double value) {
  if (!std::isfinite(value)) return static_cast<float>(value);
  float nearest = static_cast<float>(value);
  if (static_cast<double>(nearest) == value) return nearest;
  if (std::isinf(nearest) ||
      std::fabs(static_cast<double>(nearest)) > std::fabs(value)) {
    nearest = std::nextafter(nearest, 0.0f);  // truncate toward zero
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(nearest) | 1u);
}

// DoubleToHalfBits() / DoubleToBFloat16Bits() round a double once.
inline uint16_t DoubleToHalfBits(double value) {
  return FloatToHalfBits(DoubleToFloatRoundToOdd(value));
}
inline uint16_t DoubleToBFloat16Bits(double value) {
  return FloatToBFloat16Bits(DoubleToFloatRoundToOdd(value));
}

// Half is one binary16 element as stored in a tensor.
struct Half {
  uint16_t bits;

  static constexpr Half FromBits(uint16_t bits) { return Half{bits}; }
  static constexpr Half FromFloat(float value) {
    return Half{FloatToHalfBits(value)};
  }
  constexpr float ToFloat() const { return HalfBitsToFloat(bits); }
};

// BFloat16 is one bfloat16 element as stored in a tensor.
struct BFloat16 {
  uint16_t bits;

  static constexpr BFloat16 FromBits(uint16_t bits) { return BFloat16{bits}; }
  static constexpr BFloat16 FromFloat(float value) {
    return BFloat16{FloatToBFloat16Bits(value)};
  }
  constexpr float ToFloat() const { return BFloat16BitsToFloat(bits); }
};

template <>
struct DTypeOfHost<Half> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOfHost<BFloat16> {
  static constexpr DType value = DType::kBF16;
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_HALF_H_
