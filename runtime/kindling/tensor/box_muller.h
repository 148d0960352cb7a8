// BoxMullerFloat: the float normal pair every backend computes from two
// Philox words, written with only +, *, sqrt and bit operations so that it
// vectorizes on the CPU and a CUDA kernel can reproduce it bit for bit.
//
// libm's logf/sinf/cosf are calls per element that gcc does not vectorize
// (the f32 normal fill ran at about a quarter of the uniform fill's speed
// with them), and CUDA's versions round differently, so the same seed would
// give different normals on the two backends. These polynomials (Cephes-style
// minimax coefficients, within 2 ulp over the inputs Box-Muller feeds them)
// fix the arithmetic instead:
//
//   r = sqrt(-2 * KindlingLog(OpenUniformFloat(w0)))
//   (s, c) = KindlingSinCos2Pi(UniformFloat(w1))     sin and cos of 2 pi u
//   pair = (r * c, r * s)
//
// Every operation is a single IEEE float operation rounded to nearest (no
// fused multiply-add: build with -ffp-contract=off, on CUDA use __fmul_rn /
// __fadd_rn and sqrtf with -prec-sqrt=true).
#ifndef KINDLING_TENSOR_BOX_MULLER_H_
#define KINDLING_TENSOR_BOX_MULLER_H_

#include <bit>
#include <cmath>
#include <cstdint>

#include "kindling/tensor/philox.h"

namespace kindling {

// KindlingLog() is ln(x) for a positive normal float x (what
// OpenUniformFloat returns: 2^-24 .. 1).
KINDLING_HOST_DEVICE inline float KindlingLog(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  // x = m * 2^e with m in [0.5, 1), then m moved into [sqrt(1/2), sqrt(2)).
  float exponent = static_cast<float>((bits >> 23) - 126);
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
  const bool low = m < 0.707106781186547524f;
  exponent = low ? exponent - 1.0f : exponent;
  m = low ? (m + m) - 1.0f : m - 1.0f;  // exact
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  // ln 2 split so that exponent * 0.693359375 is exact.
  y = y + exponent * -2.12194440e-4f;
  y = y - 0.5f * z;
  return (m + y) + exponent * 0.693359375f;
}

// KindlingSinCos2Pi() writes sin(2 pi u) and cos(2 pi u) for u in [0, 1).
KINDLING_HOST_DEVICE inline void KindlingSinCos2Pi(float u, float& sine,
                                                   float& cosine) {
  // u = quadrant / 4 + r with r in [-1/8, 1/8] (exact: both on u's grid).
  const int32_t quadrant = static_cast<int32_t>(u * 4.0f + 0.5f);
  const float r = u - static_cast<float>(quadrant) * 0.25f;
  const float x = r * 6.28318530717958647692f;  // in [-pi/4, pi/4]
  const float z = x * x;
  float s = -1.9515295891e-4f;
  s = s * z + 8.3321608736e-3f;
  s = s * z - 1.6666654611e-1f;
  s = s * z * x + x;
  float c = 2.443315711809948e-5f;
  c = c * z - 1.388731625493765e-3f;
  c = c * z + 4.166664568298827e-2f;
  c = c * z * z - 0.5f * z + 1.0f;
  // Rotate by quadrant * pi / 2.
  const int32_t q = quadrant & 3;
  const float sin_base = (q & 1) ? c : s;
  const float cos_base = (q & 1) ? s : c;
  sine = (q & 2) ? -sin_base : sin_base;
  cosine = (q == 1 || q == 2) ? -cos_base : cos_base;
}

// BoxMullerFloat() writes the standard normal pair of words (w0, w1).
KINDLING_HOST_DEVICE inline void BoxMullerFloat(uint32_t w0, uint32_t w1,
                                                float& first, float& second) {
  const float radius = std::sqrt(-2.0f * KindlingLog(OpenUniformFloat(w0)));
  float sine, cosine;
  KindlingSinCos2Pi(UniformFloat(w1), sine, cosine);
  first = radius * cosine;
  second = radius * sine;
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_BOX_MULLER_H_
