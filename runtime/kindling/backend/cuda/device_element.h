// Element conversions for the CUDA kernels, callable on host and device.
//
// The CUDA backend must convert exactly as the CPU backend does
// (backend/cpu/element.h): floats round to nearest even (16-bit targets bit
// for bit as half.h specifies, NaNs quieted with their top payload bits),
// float -> integer truncates, saturates and maps NaN to 0, integer ->
// narrower integer wraps, x -> bool is x != 0. CUDA's own __float2half_rn and
// friends differ on NaN payloads, and half.h's functions are host-only
// (std::bit_cast, std::nextafter), so this header restates the rules with
// KINDLING_HOST_DEVICE functions. Being host-callable, they are unit-tested on
// the CPU against half.h and element.h in the default build
// (tests/backend/cuda/device_element_test.cc).
#ifndef KINDLING_BACKEND_CUDA_DEVICE_ELEMENT_H_
#define KINDLING_BACKEND_CUDA_DEVICE_ELEMENT_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kindling/tensor/half.h"
#include "kindling/tensor/philox.h"  // KINDLING_HOST_DEVICE

namespace kindling::cuda {

template <class T>
inline constexpr bool kIsHalfType =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// kIsFloating<T>: the four floating storage types.
template <class T>
inline constexpr bool kIsFloating =
    std::is_floating_point_v<T> || kIsHalfType<T>;

// Bit casts between floats and integers of one width.
KINDLING_HOST_DEVICE inline uint32_t FloatBits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}
KINDLING_HOST_DEVICE inline float BitsFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}
KINDLING_HOST_DEVICE inline uint64_t DoubleBits(double value) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(value));
#else
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
#endif
}
KINDLING_HOST_DEVICE inline double BitsDouble(uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

KINDLING_HOST_DEVICE inline bool IsNan(float x) { return x != x; }
KINDLING_HOST_DEVICE inline bool IsNan(double x) { return x != x; }

// FloatToHalf() is half.h's FloatToHalfBits().
KINDLING_HOST_DEVICE inline uint16_t FloatToHalf(float value) {
  const uint32_t bits = FloatBits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    if (magnitude < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;
    uint32_t result = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) {
      ++result;
    }
    return static_cast<uint16_t>(sign | result);
  }
  uint32_t result = magnitude - 0x38000000u;
  const uint32_t remainder = result & 0x1fffu;
  result >>= 13;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

// HalfToFloat() is half.h's HalfBitsToFloat().
KINDLING_HOST_DEVICE inline float HalfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return BitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign != 0 ? -magnitude : magnitude;
  }
  return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// FloatToBFloat16() / BFloat16ToFloat(): half.h's bfloat16 conversions.
KINDLING_HOST_DEVICE inline uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}
KINDLING_HOST_DEVICE inline float BFloat16ToFloat(uint16_t bits) {
  return BitsFloat(static_cast<uint32_t>(bits) << 16);
}

// DoubleToFloatOdd() is half.h's DoubleToFloatRoundToOdd(): truncate toward
// zero, set the last bit when inexact, so one more rounding to a 16-bit
// format equals rounding the double directly.
KINDLING_HOST_DEVICE inline float DoubleToFloatOdd(double value) {
  const uint64_t bits = DoubleBits(value);
  if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) {
    return static_cast<float>(value);  // inf or NaN
  }
  float nearest = static_cast<float>(value);
  if (static_cast<double>(nearest) == value) return nearest;
  const double magnitude = value < 0 ? -value : value;
  const float nearest_magnitude = nearest < 0 ? -nearest : nearest;
  uint32_t nearest_bits = FloatBits(nearest);
  // nextafter(nearest, 0): one step toward zero in magnitude (an infinity
  // steps to the largest finite float; zero never needs the step).
  if (nearest_magnitude == __builtin_huge_valf() ||
      static_cast<double>(nearest_magnitude) > magnitude) {
    nearest_bits -= 1;
  }
  return BitsFloat(nearest_bits | 1u);
}

// Widen() is the exact float (f32, f16, bf16) or double value of an element.
KINDLING_HOST_DEVICE inline float Widen(Half value) {
  return HalfToFloat(value.bits);
}
KINDLING_HOST_DEVICE inline float Widen(BFloat16 value) {
  return BFloat16ToFloat(value.bits);
}
KINDLING_HOST_DEVICE inline float Widen(float value) { return value; }
KINDLING_HOST_DEVICE inline double Widen(double value) { return value; }

// IntLimits<T>: the range of an integer storage type (std::numeric_limits
// is host-only without --expt-relaxed-constexpr).
template <class T>
struct IntLimits;
template <>
struct IntLimits<int64_t> {
  static constexpr int64_t kMin = -0x7fffffffffffffffll - 1;
  static constexpr int64_t kMax = 0x7fffffffffffffffll;
};
template <>
struct IntLimits<int32_t> {
  static constexpr int32_t kMin = -0x7fffffff - 1;
  static constexpr int32_t kMax = 0x7fffffff;
};
template <>
struct IntLimits<uint8_t> {
  static constexpr uint8_t kMin = 0;
  static constexpr uint8_t kMax = 255;
};

// FromFloating() narrows a float or double to `To` by the rules above.
template <class To, class From>
KINDLING_HOST_DEVICE inline To FromFloating(From value) {
  static_assert(std::is_floating_point_v<From>);
  if constexpr (std::is_same_v<To, bool>) {
    return value != 0;
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, double>) {
      return Half{FloatToHalf(DoubleToFloatOdd(value))};
    } else {
      return Half{FloatToHalf(value)};
    }
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, double>) {
      return BFloat16{FloatToBFloat16(DoubleToFloatOdd(value))};
    } else {
      return BFloat16{FloatToBFloat16(value)};
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else {
    if (IsNan(value)) return To{0};
    // Powers of two, exact in float and double.
    constexpr From kLow = static_cast<From>(IntLimits<To>::kMin);
    constexpr From kHigh = static_cast<From>(IntLimits<To>::kMax / 2 + 1) * 2;
    if (value <= kLow) return IntLimits<To>::kMin;
    if (value >= kHigh) return IntLimits<To>::kMax;
    return static_cast<To>(value);
  }
}

// Convert() is the element conversion every CUDA kernel uses (element.h's
// Convert, restated for device code).
template <class To, class From>
KINDLING_HOST_DEVICE inline To Convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (kIsHalfType<From>) {
    return Convert<To>(Widen(value));
  } else if constexpr (std::is_floating_point_v<From>) {
    return FromFloating<To>(value);
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != 0;
  } else if constexpr (kIsHalfType<To>) {
    return FromFloating<To>(static_cast<double>(value));
  } else {
    return static_cast<To>(value);  // integer or bool source: exact or wraps
  }
}

// ComputeType<T>: what arithmetic on a T element is done in: f64 in double,
// the 16-bit floats in float, everything else in itself.
template <class T>
using ComputeType = std::conditional_t<kIsHalfType<T>, float, T>;

// ToCompute() widens a stored element to its ComputeType.
template <class T>
KINDLING_HOST_DEVICE inline ComputeType<T> ToCompute(T value) {
  if constexpr (kIsHalfType<T>) {
    return Widen(value);
  } else {
    return value;
  }
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_DEVICE_ELEMENT_H_
