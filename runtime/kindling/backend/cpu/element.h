// Element types of the CPU kernels: dispatch from DType and conversions.
//
// DispatchDType (kindling/tensor/dtype_dispatch.h) picks the C++ type that
// stores a dtype (Half and BFloat16 for the 16-bit floats). Convert<To>
// is the one conversion every kernel uses, so casts, fills and copies agree:
//   * floating -> floating rounds to nearest even (16-bit targets bit-exact,
//     see half.h), keeping infinities and NaNs;
//   * floating -> integer truncates toward zero, saturates out-of-range
//     values, and maps NaN to 0 (never undefined behaviour);
//   * integer -> narrower integer wraps (two's complement), like NumPy;
//   * anything -> bool is `value != 0`; bool -> number is 0 or 1.
#ifndef KINDLING_BACKEND_CPU_ELEMENT_H_
#define KINDLING_BACKEND_CPU_ELEMENT_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/half.h"

namespace kindling::cpu {

template <class T>
inline constexpr bool kIsHalfType =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// ToDouble() / ToFloat() widen any element exactly (except i64 beyond 2^53
// for ToDouble).
template <class T>
inline double ToDouble(T value) {
  if constexpr (kIsHalfType<T>) {
    return value.ToFloat();
  } else {
    return static_cast<double>(value);
  }
}

// FromFloating() narrows a float or double to `To` by the rules above.
template <class To, class From>
inline To FromFloating(From value) {
  static_assert(std::is_floating_point_v<From>);
  if constexpr (std::is_same_v<To, bool>) {
    return value != 0;
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, double>) {
      return Half::FromBits(DoubleToHalfBits(value));
    } else {
      return Half::FromBits(FloatToHalfBits(value));
    }
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, double>) {
      return BFloat16::FromBits(DoubleToBFloat16Bits(value));
    } else {
      return BFloat16::FromBits(FloatToBFloat16Bits(value));
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else {
    if (std::isnan(value)) return To{0};
    // Powers of two, exact in float and double.
    constexpr From kLow = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From kHigh =
        static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * 2;
    if (value <= kLow) return std::numeric_limits<To>::min();
    if (value >= kHigh) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  }
}

// Convert() is the element conversion all CPU kernels use.
template <class To, class From>
inline To Convert(From value) {
  if constexpr (std::is_same_v<To, From>) {
    return value;
  } else if constexpr (kIsHalfType<From>) {
    return Convert<To>(value.ToFloat());
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

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_ELEMENT_H_
