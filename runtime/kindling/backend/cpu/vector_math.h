// VectorExp: e^x for float written so that gcc vectorizes it.
//
// glibc's expf is a function call per element, which keeps loops like softmax
// scalar (about 5 ns an element). VectorExp() is branch-free straight-line
// code (Cody-Waite range reduction, the Cephes degree-6 polynomial, the power
// of two built from bits), so a loop over it compiles to AVX2. Accuracy is
// within 2 ulp of the exact value over the whole float range; e^x
// underflows to 0 (through subnormals) below about -103.9, overflows to +inf
// above about 88.72, and NaN stays NaN.
#ifndef KINDLING_BACKEND_CPU_VECTOR_MATH_H_
#define KINDLING_BACKEND_CPU_VECTOR_MATH_H_

#include <bit>
#include <cstdint>

namespace kindling::cpu {

inline float VectorExp(float x) {
  // Beyond these e^x is 0 or inf in float; clamping keeps n in int range.
  constexpr float kLow = -104.0f;
  constexpr float kHigh = 89.0f;
  const float clamped = x < kLow ? kLow : (x > kHigh ? kHigh : x);
  const float safe = clamped == clamped ? clamped : 0.0f;  // NaN handled below
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest even).
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRoundMagic = 12582912.0f;
  const float n = (safe * kLog2e + kRoundMagic) - kRoundMagic;
  // r = x - n ln 2, with ln 2 split so that n * kLn2High is exact.
  constexpr float kLn2High = 0.693359375f;
  constexpr float kLn2Low = -2.12194440e-4f;
  const float r = (safe - n * kLn2High) - n * kLn2Low;
  // e^r on [-ln2/2, ln2/2] (Cephes expf coefficients).
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  // 2^n as two factors so that n down to -150 reaches the subnormals.
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni / 2;
  const float scale_a = std::bit_cast<float>((half + 127) << 23);
  const float scale_b = std::bit_cast<float>((ni - half + 127) << 23);
  const float result = er * scale_a * scale_b;
  return x == x ? result : x;
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_VECTOR_MATH_H_
