// The scalar formulas of the element-wise ops that are the same math on
// every backend (the activations, clamping, wrapping integer arithmetic,
// NaN-propagating maximum and minimum), written once as host-device functions:
// the CPU kernels' scalar paths (f64, and f32 where no vector path exists) and
// the CUDA functors call these, so the two cannot drift apart. Vectorized
// variants (backend/cpu/vector_math.h) are separate: they compute the same
// function to a stated error bound, not the same expression.
//
//   out[i] = element_math::Sigmoid(in[i]);   // float or double
//
// Compiled by gcc for the CPU and by nvcc for both host and device; the
// math functions are std::'s, which nvcc also provides on the device.
#ifndef KINDLING_TENSOR_ELEMENT_MATH_H_
#define KINDLING_TENSOR_ELEMENT_MATH_H_

#include <cmath>
#include <type_traits>

#if defined(__CUDACC__)
#define KINDLING_HOST_DEVICE __host__ __device__
#else
#define KINDLING_HOST_DEVICE
#endif

namespace kindling::element_math {

template <class T>
KINDLING_HOST_DEVICE inline T Relu(T x) {
  return x > T{0} ? x : T{0};
}

// Clamp() to [low, high]; NaN passes through (neither comparison holds).
template <class T>
KINDLING_HOST_DEVICE inline T Clamp(T x, T low, T high) {
  const T lower = x < low ? low : x;
  return lower > high ? high : lower;
}

template <class T>
KINDLING_HOST_DEVICE inline T Sigmoid(T x) {
  using std::exp;
  return T(1) / (T(1) + exp(-x));
}

// Gelu() in its erf form, 0.5 x erfc(-x / sqrt(2)): erfc keeps precision
// for large negative x, where 1 + erf(x / sqrt(2)) cancels.
template <class T>
KINDLING_HOST_DEVICE inline T Gelu(T x) {
  using std::erfc;
  return T(0.5) * x * erfc(-x * T(0.70710678118654752440));
}

// GeluBackward(): the incoming gradient times GELU's slope at `input`,
// Phi(x) + x phi(x) (Phi, phi: the standard normal CDF and density). x is
// clamped to [-40, 40] in the density term (where it is 0 in double), so
// the slope at +-inf is 1 or 0, not inf * 0; NaN stays NaN. Integers never
// get here (the op is floating-point only): they give 0.
template <class T>
KINDLING_HOST_DEVICE inline T GeluBackward(T grad, T input) {
  if constexpr (std::is_integral_v<T>) {
    return T(0);
  } else {
    using std::erfc;
    using std::exp;
    const T cdf = T(0.5) * erfc(-input * T(0.70710678118654752440));
    const T clamped = input > T(40) ? T(40) : (input < T(-40) ? T(-40) : input);
    const T density =
        T(0.39894228040143267794) * exp(T(-0.5) * clamped * clamped);
    return grad * (cdf + clamped * density);
  }
}

// --- Arithmetic on any element type ---------------------------------------
// T is a compute type: an integer, float or double.

// WrapAdd(), WrapSub(), WrapMul(): integers wrap (two's complement), so
// signed overflow is never undefined.
template <class T>
KINDLING_HOST_DEVICE inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <class T>
KINDLING_HOST_DEVICE inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  } else {
    return a - b;
  }
}
template <class T>
KINDLING_HOST_DEVICE inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// SafeDiv(): integer division truncates; x / 0 is 0 and MIN / -1 wraps to
// MIN. Floats divide as IEEE does.
template <class T>
KINDLING_HOST_DEVICE inline T SafeDiv(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return T{0};
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return WrapSub(T{0}, a);
    }
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

// IntPow(): integer power by squaring; negative exponents give the integer
// part of the real result (0 except for bases 1 and -1).
template <class T>
KINDLING_HOST_DEVICE inline T IntPow(T base, T exponent) {
  if constexpr (std::is_signed_v<T>) {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exponent & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exponent = static_cast<T>(exponent >> 1);
  }
  return result;
}

// IsNan() is false for every integer.
template <class T>
KINDLING_HOST_DEVICE inline bool IsNan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// Maximum() and Minimum() propagate NaN, as torch.maximum does.
template <class T>
KINDLING_HOST_DEVICE inline T Maximum(T a, T b) {
  if (IsNan(a) || IsNan(b)) return a + b;
  return a > b ? a : b;
}
template <class T>
KINDLING_HOST_DEVICE inline T Minimum(T a, T b) {
  if (IsNan(a) || IsNan(b)) return a + b;
  return a < b ? a : b;
}

// ReluBackward(): the incoming gradient where the input was positive, else 0.
template <class T>
KINDLING_HOST_DEVICE inline T ReluBackward(T grad, T input) {
  return input <= T(0) ? T(0) : grad;
}

}  // namespace kindling::element_math

#endif  // KINDLING_TENSOR_ELEMENT_MATH_H_
