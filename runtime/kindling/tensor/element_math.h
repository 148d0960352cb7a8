// The scalar formulas of the element-wise ops that are the same math on
// every backend, written once as host-device functions: the CPU kernels'
// scalar paths (f64, and f32 where no vector path exists) and the CUDA
// functors call these, so the two cannot drift apart. Vectorized variants
// (backend/cpu/vector_math.h) are separate: they compute the same function
// to a stated error bound, not the same expression.
//
//   out[i] = element_math::Sigmoid(in[i]);   // float or double
//
// Compiled by gcc for the CPU and by nvcc for both host and device; the
// math functions are std::'s, which nvcc also provides on the device.
#ifndef KINDLING_TENSOR_ELEMENT_MATH_H_
#define KINDLING_TENSOR_ELEMENT_MATH_H_

#include <cmath>

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

}  // namespace kindling::element_math

#endif  // KINDLING_TENSOR_ELEMENT_MATH_H_
