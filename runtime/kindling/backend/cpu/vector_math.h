// Vector math: e^x, log, tanh, sigmoid and GELU on eight floats at once.
//
// glibc's expf/logf/tanhf/erff are a function call per element, which keeps
// loops like softmax scalar (about 5 ns an element). These functions take and
// return an AVX2 register (__m256) and are branch-free straight-line FMA code,
// so a kernel loop over them runs eight lanes per instruction; the kernels
// are built for x86-64-v3 (AVX2 + FMA, see .bazelrc).
//
// Accuracy, against the correctly rounded result (tests/backend/cpu/
// vector_math_test.cc checks each bound on every 4099th float; the worst
// error seen there is in brackets):
//   Exp8      <= 2 ulp [1]; 0 (through the subnormals) below about -103.9,
//             +inf above about 88.72.
//   Log8      <= 2 ulp [1]; log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf,
//             subnormal inputs handled.
//   Tanh8     <= 2 ulp [1]; +-1 for large |x|.
//   Sigmoid8  <= 3 ulp [2] where the result is normal; 0 below x = -88.7.
//   Gelu8     x * Phi(x) (the exact, erf form): <= 8 ulp [8; every 7th float
//             checked once] for x >= -9, <= 10 ulp for -14 <= x < -9 (Phi(x)
//             is computed as an upper tail, never as 1 + erf), underflowing
//             to 0 near x = -14.3. Most of the error comes from rounding
//             u = 4 / (4 + a) (see Gelu8), which the polynomial amplifies
//             about threefold near x = 0.
//   GeluSlope8  GELU's derivative Phi(x) + x phi(x): within 5 ulp [4.24] of
//             |Phi(x)| + |x phi(x)| (the terms cancel near x = -0.75).
// All map NaN to NaN. Range reduction follows Cephes (Cody-Waite with ln 2
// split in two, Cephes' expf/logf/tanhf polynomials); Gelu8's tail
// polynomial is Kindling's own fit (see there).
//
// Why not a library: SLEEF (what PyTorch vectorizes with; Debian ships
// only its shared library, so each vector is a call) takes 1.08-2.24x
// these functions' time at the same or better accuracy on this project's
// AVX-512 machines, and its erfc in GELU is 177 ulp off in the tail;
// only its 3.5-ulp log and tanh are faster, and they are less accurate
// (benches/vector_math_bench).
//
// Also here: LoadPartial/StorePartial for loop tails, WriteFloats (a row
// store loop, optionally streaming), AddWidened (float lanes into double
// lanes) and the horizontal Max8, Min8 and Sum4d.
#ifndef KINDLING_BACKEND_CPU_VECTOR_MATH_H_
#define KINDLING_BACKEND_CPU_VECTOR_MATH_H_

#if !defined(__AVX2__) || !defined(__FMA__)
#error "the CPU kernels need AVX2 and FMA: build with -march=x86-64-v3"
#endif

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace kindling::cpu {

// --- Loads, stores and horizontal reductions ---------------------------------

// TailMask() has lanes [0, count) set, count in [0, 8].
inline __m256i TailMask(int64_t count) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(count)),
                            lanes);
}

// LoadPartial() reads x[0..count) (count < 8 allowed) and fills the other
// lanes with `fill`; StorePartial() writes only lanes [0, count).
inline __m256 LoadPartial(const float* x, int64_t count, float fill) {
  const __m256i mask = TailMask(count);
  return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(x, mask),
                          _mm256_castsi256_ps(mask));
}
inline void StorePartial(float* y, int64_t count, __m256 value) {
  _mm256_maskstore_ps(y, TailMask(count), value);
}

// Max8() / Min8() are the largest / smallest of the eight lanes (no NaNs).
inline float Max8(__m256 x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
inline float Min8(__m256 x) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Sum8() is the sum of the eight lanes, added in pairs.
inline float Sum8(__m256 x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// LanesOfBits8() has lane i set where bit i of `bits` is (bits 0-7).
inline __m256i LanesOfBits8(uint32_t bits) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i word = _mm256_set1_epi32(static_cast<int32_t>(bits));
  return _mm256_cmpeq_epi32(_mm256_and_si256(word, bit), bit);
}

// Sum4d() is the sum of four doubles.
inline double Sum4d(__m256d x) {
  __m128d s =
      _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

// WriteFloats() stores y[0..n) from f(i, count), which returns the eight
// lanes of elements i..i+8 (only `count` < 8 of them at the end). With
// `stream`, the 32-byte-aligned body goes out with non-temporal stores (for
// outputs too large to stay in cache: a normal store first reads the line it
// overwrites); the caller issues _mm_sfence() before other threads read y.
template <class F>
void WriteFloats(float* y, int64_t n, bool stream, const F& f) {
  int64_t i = 0;
  if (stream && reinterpret_cast<uintptr_t>(y) % sizeof(float) == 0) {
    const int64_t head = std::min<int64_t>(
        n, (32 - reinterpret_cast<uintptr_t>(y) % 32) % 32 / sizeof(float));
    if (head > 0) StorePartial(y, head, f(int64_t{0}, head));
    for (i = head; i + 8 <= n; i += 8)
      _mm256_stream_ps(y + i, f(i, int64_t{8}));
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(i, int64_t{8}));
  }
  if (i < n) StorePartial(y + i, n - i, f(i, n - i));
}

// AddWidened() adds the eight floats of x to four double lanes (pairs).
inline __m256d AddWidened(__m256d sum, __m256 x) {
  sum = _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_castps256_ps128(x)));
  return _mm256_add_pd(sum, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
}

// --- Functions -------------------------------------------------------------

namespace vector_math_internal {

inline __m256 IsNan(__m256 x) { return _mm256_cmp_ps(x, x, _CMP_UNORD_Q); }

inline __m256 Abs(__m256 x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

// ScaleByPowerOfTwo() is value * 2^n for integral n in [-150, 129], as two
// factors so that results reach the subnormals.
inline __m256 ScaleByPowerOfTwo(__m256 value, __m256 n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 scale_a =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 scale_b = _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(value, scale_a), scale_b);
}

// Clamp() is min(max(x, low), high); a NaN lane becomes `low`.
inline __m256 Clamp(__m256 x, float low, float high) {
  return _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(low)),
                       _mm256_set1_ps(high));
}

// ExpPolynomial() is e^r for |r| <= about ln2 / 2 (Cephes expf
// coefficients), 1 + r + r^2 p(r) with p by Estrin's scheme: a shorter
// dependency chain than Horner's, which is what bounds these loops (GELU
// and softmax run several of these chains per element).
// Its coefficients, highest degree first (ExpPolynomial16 uses them too).
namespace exp_polynomial {
inline constexpr float kP0 = 1.9875691500e-4f;
inline constexpr float kP1 = 1.3981999507e-3f;
inline constexpr float kP2 = 8.3334519073e-3f;
inline constexpr float kP3 = 4.1665795894e-2f;
inline constexpr float kP4 = 1.6666665459e-1f;
inline constexpr float kP5 = 5.0000001201e-1f;
}  // namespace exp_polynomial

// Cephes logf's polynomial P of Log8 / Log16, highest degree first.
inline constexpr float kLogPolynomial[] = {
    7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
    -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
    2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f,
};

// Cephes tanhf's polynomial P of Tanh8 / Tanh16 (tanh x = x + x^3 P(x^2)
// for |x| < 0.625), highest degree first.
inline constexpr float kTanhPolynomial[] = {
    -5.70498872745e-3f, 2.06390887954e-2f,  -5.37397155531e-2f,
    1.33314422036e-1f,  -3.33332819422e-1f,
};
inline __m256 ExpPolynomial(__m256 r) {
  namespace c = exp_polynomial;
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 r4 = _mm256_mul_ps(r2, r2);
  const __m256 p01 =
      _mm256_fmadd_ps(_mm256_set1_ps(c::kP0), r, _mm256_set1_ps(c::kP1));
  const __m256 p23 =
      _mm256_fmadd_ps(_mm256_set1_ps(c::kP2), r, _mm256_set1_ps(c::kP3));
  const __m256 p45 =
      _mm256_fmadd_ps(_mm256_set1_ps(c::kP4), r, _mm256_set1_ps(c::kP5));
  const __m256 p = _mm256_fmadd_ps(p01, r4, _mm256_fmadd_ps(p23, r2, p45));
  return _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
}

// ln 2 split so that n * kLn2High is exact for |n| < 2^15 and x - n ln 2
// loses nothing.
constexpr float kLn2High = 0.693359375f;
constexpr float kLn2Low = -2.12194440e-4f;
constexpr float kLog2e = 1.44269504088896341f;

// RoundLog2() is round(x / ln 2) per lane.
inline __m256 RoundLog2(__m256 x) {
  return _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// AllWithin() is whether every lane has |x| <= limit (false on a NaN).
inline bool AllWithin(__m256 x, float limit) {
  return _mm256_movemask_ps(
             _mm256_cmp_ps(Abs(x), _mm256_set1_ps(limit), _CMP_LE_OQ)) == 0xff;
}

// The fast path's bound: for |x| <= 86, 2^n * e^r is a normal float, so 2^n
// can be added into the exponent bits directly.
constexpr float kExpFastLimit = 86.0f;

// TimesPowerOfTwo() is value * 2^n for a normal result.
inline __m256 TimesPowerOfTwo(__m256 value, __m256 n) {
  return _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_castps_si256(value),
                       _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)));
}

// ExpSumGeneral() is ExpSum() for any lanes: clamped to [-104, 89] (beyond
// it e^x is 0 or inf in float), 2^n applied as two factors so that results
// reach the subnormals, and high + low below -104 giving 0.
inline __m256 ExpSumGeneral(__m256 high, __m256 low) {
  const __m256 sum = _mm256_add_ps(high, low);
  const __m256 n = RoundLog2(Clamp(sum, -104.0f, 89.0f));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High),
                              Clamp(high, -104.0f, 89.0f));
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), r);
  r = _mm256_add_ps(r, low);
  return _mm256_blendv_ps(
      ScaleByPowerOfTwo(ExpPolynomial(r), n), _mm256_setzero_ps(),
      _mm256_cmp_ps(sum, _mm256_set1_ps(-104.0f), _CMP_LT_OQ));
}

// ExpSum() is e^(high + low) for `low` small next to `high` or both small;
// `low` joins after the range reduction, so its bits are kept (GELU passes
// -x^2 / 2 as an exact high + low pair). Lanes beyond +-86 or NaN take the
// general path for the whole vector.
inline __m256 ExpSum(__m256 high, __m256 low) {
  const __m256 sum = _mm256_add_ps(high, low);
  if (!AllWithin(sum, kExpFastLimit)) return ExpSumGeneral(high, low);
  const __m256 n = RoundLog2(sum);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), high);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), r);
  return TimesPowerOfTwo(ExpPolynomial(_mm256_add_ps(r, low)), n);
}

// The tail polynomial P of Gelu8 / Gelu16 (see Gelu8).
namespace gelu_tail {
constexpr float kP0 = 0.099738501f;
constexpr float kP1 = 0.09967269f;
constexpr float kP2 = 0.0940405726f;
constexpr float kP3 = 0.0787872374f;
constexpr float kP4 = 0.0672854781f;
constexpr float kP5 = 0.0483376868f;
constexpr float kP6 = -0.0138759082f;
constexpr float kP7 = 0.0830137879f;
constexpr float kP8 = -0.0759838223f;
constexpr float kP9 = 0.0189837888f;
}  // namespace gelu_tail

}  // namespace vector_math_internal

// Exp8() is e^x per lane.
inline __m256 Exp8(__m256 x) {
  namespace internal = vector_math_internal;
  if (!internal::AllWithin(x, internal::kExpFastLimit)) {
    // A NaN lane is -104 in the general path and put back here.
    return _mm256_blendv_ps(
        internal::ExpSumGeneral(internal::Clamp(x, -104.0f, 89.0f),
                                _mm256_setzero_ps()),
        x, internal::IsNan(x));
  }
  const __m256 n = internal::RoundLog2(x);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(internal::kLn2High), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(internal::kLn2Low), r);
  return internal::TimesPowerOfTwo(internal::ExpPolynomial(r), n);
}

// Log8() is the natural logarithm per lane.
inline __m256 Log8(__m256 x) {
  namespace internal = vector_math_internal;
  // Subnormals: scale into the normal range first.
  const __m256 subnormal =
      _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
  const __m256 scaled = _mm256_blendv_ps(
      x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), subnormal);
  const __m256i bits = _mm256_castps_si256(scaled);
  // x = m * 2^e with m in [1, 2), then m in [sqrt(1/2), sqrt(2)).
  __m256 exponent = _mm256_cvtepi32_ps(
      _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)));
  exponent =
      _mm256_sub_ps(exponent, _mm256_and_ps(subnormal, _mm256_set1_ps(23.0f)));
  __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)),
                      _mm256_set1_epi32(0x3f800000)));
  const __m256 above_sqrt2 =
      _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), above_sqrt2);
  exponent =
      _mm256_add_ps(exponent, _mm256_and_ps(above_sqrt2, _mm256_set1_ps(1.0f)));
  const __m256 f = _mm256_sub_ps(m, _mm256_set1_ps(1.0f));
  const __m256 z = _mm256_mul_ps(f, f);
  // log(1 + f) = f - f^2/2 + f^3 P(f) (Cephes logf coefficients).
  __m256 p = _mm256_set1_ps(internal::kLogPolynomial[0]);
  for (int i = 1; i < 9; ++i) {
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(internal::kLogPolynomial[i]));
  }
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, z), f);
  y = _mm256_fmadd_ps(exponent, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), z, y);
  __m256 result = _mm256_add_ps(f, y);
  result = _mm256_fmadd_ps(exponent, _mm256_set1_ps(0.693359375f), result);
  // log(0) = -inf; log(negative or NaN) = NaN; log(inf) = inf.
  const __m256 infinity = _mm256_set1_ps(__builtin_inff());
  result =
      _mm256_blendv_ps(result, _mm256_sub_ps(_mm256_setzero_ps(), infinity),
                       _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
  result = _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_nanf("")),
                            _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  result = _mm256_blendv_ps(result, x, internal::IsNan(x));
  return _mm256_blendv_ps(result, infinity,
                          _mm256_cmp_ps(x, infinity, _CMP_EQ_OQ));
}

// Tanh8() is tanh per lane.
inline __m256 Tanh8(__m256 x) {
  namespace internal = vector_math_internal;
  const __m256 magnitude = internal::Abs(x);
  // |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf coefficients).
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(internal::kTanhPolynomial[0]);
  for (int i = 1; i < 5; ++i) {
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(internal::kTanhPolynomial[i]));
  }
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  // Otherwise 1 - 2 / (e^2|x| + 1), with x's sign (NaN stays NaN: e^NaN).
  const __m256 e = Exp8(_mm256_add_ps(magnitude, magnitude));
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 large = _mm256_sub_ps(
      one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  large = _mm256_or_ps(large, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
  return _mm256_blendv_ps(
      large, small,
      _mm256_cmp_ps(magnitude, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

// Sigmoid8() is 1 / (1 + e^-x) per lane.
inline __m256 Sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}

namespace vector_math_internal {

// GeluTerms8() sets *phi = Phi(x) and *gaussian = e^(-a^2 / 2) per lane,
// the two factors Gelu8 and GeluSlope8 share (see Gelu8 for the method).
inline void GeluTerms8(__m256 x, __m256* phi, __m256* gaussian) {
  // |x| beyond 20 has Phi 0 or 1 in float; clamping keeps a^2 finite. A NaN
  // lane becomes 20 here (the callers put the NaN back).
  const __m256 a = _mm256_min_ps(Abs(x), _mm256_set1_ps(20.0f));
  const __m256 four = _mm256_set1_ps(4.0f);
  const __m256 u = _mm256_div_ps(four, _mm256_add_ps(a, four));
  // P(u) by Estrin's scheme (see ExpPolynomial).
  const __m256 u2 = _mm256_mul_ps(u, u);
  const __m256 u4 = _mm256_mul_ps(u2, u2);
  const __m256 u8 = _mm256_mul_ps(u4, u4);
  namespace coefficient = gelu_tail;
  auto pair = [&](float high, float low) {
    return _mm256_fmadd_ps(_mm256_set1_ps(high), u, _mm256_set1_ps(low));
  };
  const __m256 p01 = pair(coefficient::kP1, coefficient::kP0);
  const __m256 p23 = pair(coefficient::kP3, coefficient::kP2);
  const __m256 p45 = pair(coefficient::kP5, coefficient::kP4);
  const __m256 p67 = pair(coefficient::kP7, coefficient::kP6);
  const __m256 p89 = pair(coefficient::kP9, coefficient::kP8);
  const __m256 p0123 = _mm256_fmadd_ps(p23, u2, p01);
  const __m256 p4567 = _mm256_fmadd_ps(p67, u2, p45);
  const __m256 p = _mm256_fmadd_ps(p89, u8, _mm256_fmadd_ps(p4567, u4, p0123));
  // -a^2 / 2 exactly, as high + low.
  const __m256 square = _mm256_mul_ps(a, a);
  const __m256 square_error = _mm256_fmsub_ps(a, a, square);
  const __m256 minus_half = _mm256_set1_ps(-0.5f);
  *gaussian = ExpSum(_mm256_mul_ps(square, minus_half),
                     _mm256_mul_ps(square_error, minus_half));
  const __m256 tail = _mm256_mul_ps(_mm256_mul_ps(u, p), *gaussian);
  // Phi = Q for x < 0 (blendv picks by x's sign bit), 1 - Q otherwise.
  *phi = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), tail), tail, x);
}

// kInverseSqrtTwoPi: the standard normal density's factor, 1 / sqrt(2 pi).
constexpr float kInverseSqrtTwoPi = 0.398942280401432677940f;

}  // namespace vector_math_internal

// Gelu8() is x * Phi(x) per lane, Phi the standard normal CDF. With a =
// |x|, Phi(x) = Q(a) for x < 0 and 1 - Q(a) otherwise, where Q(a) = erfc(a /
// sqrt 2) / 2 is the upper tail, computed directly (never as 1 - something,
// so it keeps its relative accuracy where it is tiny) as
//   Q(a) = e^(-a^2 / 2) * u * P(u),   u = 4 / (4 + a),
// P of degree 9. e^(a^2 / 2) Q(a) is a smooth, slowly varying function
// (1/2 at a = 0, about 1 / (a sqrt(2 pi)) for large a), and in u it is
// nearly polynomial: P's relative error is 1.3e-8 over a in [0, 20], 4.9e-8
// with the coefficients rounded to float. They come from a weighted
// least-squares fit on 4000 Chebyshev nodes in u, iteratively reweighted
// (Lawson) towards the minimax relative error, against double-precision
// erfc. The exponential and the polynomial (which waits for the division)
// are independent chains that the core overlaps; the previous form, erfc as
// u * e^(-t^2 + c(u)), chained the polynomial into the exponential and ran
// at a third of this speed. a^2 / 2 is kept exact (FMA split), so the
// exponential's argument loses nothing where it is large.
inline __m256 Gelu8(__m256 x) {
  __m256 phi, gaussian;
  vector_math_internal::GeluTerms8(x, &phi, &gaussian);
  return _mm256_mul_ps(x, phi);
}

// GeluSlope8() is GELU's derivative per lane, Phi(x) + x phi(x) with phi
// the standard normal density e^(-x^2 / 2) / sqrt(2 pi): the factor GELU's
// backward multiplies the incoming gradient by. It shares Gelu8's Phi and
// exponential (the accuracy test bounds its error by the size of the two
// terms, as they cancel near the slope's root at x = -0.75). x is clamped
// to [-20, 20] in the density term, so the slope is exactly 1 and 0 at
// +inf and -inf; a NaN lane stays NaN.
//
// GeluAndSlope8() returns Gelu8(x) and sets *slope = GeluSlope8(x) from one
// evaluation of the terms they share: GELU's forward when autodiff keeps the
// slope for the backward (a multiply then). GeluSlope8 is its slope alone
// (the unused product folds away).
inline __m256 GeluAndSlope8(__m256 x, __m256* slope) {
  namespace internal = vector_math_internal;
  __m256 phi, gaussian;
  internal::GeluTerms8(x, &phi, &gaussian);
  // max(-20, x) and min(20, .) return their second operand, x, for NaN.
  const __m256 clamped = _mm256_min_ps(
      _mm256_set1_ps(20.0f), _mm256_max_ps(_mm256_set1_ps(-20.0f), x));
  *slope = _mm256_fmadd_ps(
      _mm256_mul_ps(clamped, _mm256_set1_ps(internal::kInverseSqrtTwoPi)),
      gaussian, phi);
  return _mm256_mul_ps(x, phi);
}

inline __m256 GeluSlope8(__m256 x) {
  __m256 slope;
  GeluAndSlope8(x, &slope);
  return slope;
}

// --- AVX-512, chosen at run time
// ----------------------------------------------
//
// The kernels are built for x86-64-v3, but a CPU with full-width AVX-512
// (Zen 5, recent Xeons) runs twice the lanes per instruction. Functions
// marked KINDLING_AVX512 may use AVX-512F and must only run where
// HasAvx512() is true (callers dispatch once per kernel call).
#define KINDLING_AVX512 __attribute__((target("avx512f")))

// gcc 12's AVX-512 intrinsics start from `__m512 __Y = __Y;` (a deliberately
// undefined register), which -Wall reports as uninitialized wherever they
// are inlined; and a lambda taking __m512 gets a static invoker without the
// target, for which gcc notes the ABI change (-Wpsabi), moot inside one
// translation unit. Code using them opens and closes these two macros
// around it.
#define KINDLING_AVX512_BEGIN                                         \
  _Pragma("GCC diagnostic push")                                      \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")           \
          _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
              _Pragma("GCC diagnostic ignored \"-Wpsabi\"")
#define KINDLING_AVX512_END _Pragma("GCC diagnostic pop")

namespace internal {
// Set while a ScopedEightLanesForTesting lives.
inline std::atomic<bool> eight_lanes_for_testing{false};
}  // namespace internal

// HasAvx512() is whether this CPU (and OS) runs AVX-512F code and the
// environment does not cap Kindling at AVX2 (KINDLING_MAX_CPU_ISA=AVX2, as
// oneDNN's ONEDNN_MAX_CPU_ISA does): the cap runs the eight-lane paths a
// CPU without AVX-512 takes, so that tests cover them on any machine.
inline bool HasAvx512() {
  static const bool has = [] {
    const char* cap = std::getenv("KINDLING_MAX_CPU_ISA");
    if (cap != nullptr && std::string_view(cap) == "AVX2") return false;
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has &&
         !internal::eight_lanes_for_testing.load(std::memory_order_relaxed);
}

// ScopedEightLanesForTesting makes HasAvx512() false while it lives, so that
// a test compares the eight- and sixteen-lane paths in one process (CI's
// KINDLING_MAX_CPU_ISA=AVX2 run covers the eight-lane paths alone).
class ScopedEightLanesForTesting {
 public:
  ScopedEightLanesForTesting() {
    internal::eight_lanes_for_testing.store(true, std::memory_order_relaxed);
  }
  ~ScopedEightLanesForTesting() {
    internal::eight_lanes_for_testing.store(false, std::memory_order_relaxed);
  }
  ScopedEightLanesForTesting(const ScopedEightLanesForTesting&) = delete;
  ScopedEightLanesForTesting& operator=(const ScopedEightLanesForTesting&) =
      delete;
};

// FirstLanes16() is the mask of the first `count` of sixteen lanes: none
// for count <= 0, all for count >= 16 (a row's chunk j of sixteen is
// FirstLanes16(row_length - 16 * j)).
inline __mmask16 FirstLanes16(int64_t count) {
  if (count <= 0) return 0;
  return count >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << count) - 1);
}

// Halves8() applies an eight-lane function to each half of x: the 16-lane
// functions' slow path, so that it gives the eight-lane result bit for bit.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 inline __m256 LowHalf8(__m512 x) {
  return _mm512_castps512_ps256(x);
}
KINDLING_AVX512 inline __m256 HighHalf8(__m512 x) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}
KINDLING_AVX512 inline __m512 Join8(__m256 low_half, __m256 high_half) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(low_half)),
                         _mm256_castps_pd(high_half), 1));
}
template <class F8>
KINDLING_AVX512 inline __m512 Halves8(__m512 x, const F8& f8) {
  return Join8(f8(LowHalf8(x)), f8(HighHalf8(x)));
}

// The sixteen-lane forms of ExpPolynomial(), RoundLog2() and
// TimesPowerOfTwo(): the same operations in the same order.
KINDLING_AVX512 inline __m512 ExpPolynomial16(__m512 r) {
  namespace c = vector_math_internal::exp_polynomial;
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 r4 = _mm512_mul_ps(r2, r2);
  const __m512 p01 =
      _mm512_fmadd_ps(_mm512_set1_ps(c::kP0), r, _mm512_set1_ps(c::kP1));
  const __m512 p23 =
      _mm512_fmadd_ps(_mm512_set1_ps(c::kP2), r, _mm512_set1_ps(c::kP3));
  const __m512 p45 =
      _mm512_fmadd_ps(_mm512_set1_ps(c::kP4), r, _mm512_set1_ps(c::kP5));
  const __m512 p = _mm512_fmadd_ps(p01, r4, _mm512_fmadd_ps(p23, r2, p45));
  return _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
}

KINDLING_AVX512 inline __m512 RoundLog2_16(__m512 x) {
  return _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(vector_math_internal::kLog2e)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

KINDLING_AVX512 inline __m512 TimesPowerOfTwo16(__m512 value, __m512 n) {
  return _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_castps_si512(value),
                       _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23)));
}

// Exp16() is Exp8() on sixteen lanes, bit for bit: the same operations in
// the same order. A vector with a lane beyond |x| = 86 or a NaN lane goes
// through Exp8, one half at a time.
KINDLING_AVX512 inline __m512 Exp16(__m512 x) {
  namespace internal = vector_math_internal;
  if (_mm512_cmp_ps_mask(_mm512_abs_ps(x),
                         _mm512_set1_ps(internal::kExpFastLimit),
                         _CMP_LE_OQ) != 0xffff) {
    return Halves8(x, [](__m256 half) { return Exp8(half); });
  }
  const __m512 n = RoundLog2_16(x);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(internal::kLn2High), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(internal::kLn2Low), r);
  return TimesPowerOfTwo16(ExpPolynomial16(r), n);
}

// Tanh16() is Tanh8() on sixteen lanes, bit for bit: the same operations in
// the same order (Exp16 takes the lanes beyond its fast path through Exp8),
// the sign's copy in integer ops (AVX-512F has no float and/or) and the
// blend as a masked one.
KINDLING_AVX512 inline __m512 Tanh16(__m512 x) {
  const __m512 magnitude = _mm512_abs_ps(x);
  const __m512 z = _mm512_mul_ps(x, x);
  namespace internal = vector_math_internal;
  __m512 p = _mm512_set1_ps(internal::kTanhPolynomial[0]);
  for (int i = 1; i < 5; ++i) {
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(internal::kTanhPolynomial[i]));
  }
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  const __m512 e = Exp16(_mm512_add_ps(magnitude, magnitude));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 large = _mm512_sub_ps(
      one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512i sign =
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  const __m512 signed_large =
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(large), sign));
  const __mmask16 is_small =
      _mm512_cmp_ps_mask(magnitude, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(is_small, signed_large, small);
}

// Sigmoid16() is Sigmoid8() on sixteen lanes, bit for bit.
KINDLING_AVX512 inline __m512 Sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e = Exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
  return _mm512_div_ps(one, _mm512_add_ps(one, e));
}
KINDLING_AVX512_END

// Log16() is Log8() on sixteen lanes, bit for bit: the same operations in
// the same order, the blends as masked moves.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 inline __m512 Log16(__m512 x) {
  const __m512 zero = _mm512_setzero_ps();
  const __mmask16 subnormal =
      _mm512_cmp_ps_mask(x, _mm512_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
  const __m512 scaled =
      _mm512_mask_mul_ps(x, subnormal, x, _mm512_set1_ps(8388608.0f));
  const __m512i bits = _mm512_castps_si512(scaled);
  __m512 exponent = _mm512_cvtepi32_ps(
      _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(127)));
  exponent = _mm512_sub_ps(
      exponent, _mm512_maskz_mov_ps(subnormal, _mm512_set1_ps(23.0f)));
  __m512 m = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff)),
                      _mm512_set1_epi32(0x3f800000)));
  const __mmask16 above_sqrt2 =
      _mm512_cmp_ps_mask(m, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, above_sqrt2, m, _mm512_set1_ps(0.5f));
  exponent = _mm512_add_ps(
      exponent, _mm512_maskz_mov_ps(above_sqrt2, _mm512_set1_ps(1.0f)));
  const __m512 f = _mm512_sub_ps(m, _mm512_set1_ps(1.0f));
  const __m512 z = _mm512_mul_ps(f, f);
  namespace internal = vector_math_internal;
  __m512 p = _mm512_set1_ps(internal::kLogPolynomial[0]);
  for (int i = 1; i < 9; ++i) {
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(internal::kLogPolynomial[i]));
  }
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, z), f);
  y = _mm512_fmadd_ps(exponent, _mm512_set1_ps(-2.12194440e-4f), y);
  y = _mm512_fnmadd_ps(_mm512_set1_ps(0.5f), z, y);
  __m512 result = _mm512_add_ps(f, y);
  result = _mm512_fmadd_ps(exponent, _mm512_set1_ps(0.693359375f), result);
  const __m512 infinity = _mm512_set1_ps(__builtin_inff());
  result = _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, zero, _CMP_EQ_OQ),
                              _mm512_sub_ps(zero, infinity));
  result = _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ),
                              _mm512_set1_ps(__builtin_nanf("")));
  result =
      _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  return _mm512_mask_mov_ps(result, _mm512_cmp_ps_mask(x, infinity, _CMP_EQ_OQ),
                            infinity);
}
KINDLING_AVX512_END

// GeluTerms16() is GeluTerms8() on sixteen lanes, bit for bit: the same
// operations in the same order. It returns false, setting nothing, for
// vectors with a lane beyond |x| = 13 (where e^(-x^2 / 2) leaves the
// exponential's fast path) or a NaN lane: the callers run those through the
// eight-lane function, one half at a time.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 inline bool GeluTerms16(__m512 x, __m512* phi,
                                        __m512* gaussian) {
  namespace coefficient = vector_math_internal::gelu_tail;
  const __m512 a = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(20.0f));
  const __m512 square = _mm512_mul_ps(a, a);
  const __m512 square_error = _mm512_fmsub_ps(a, a, square);
  const __m512 minus_half = _mm512_set1_ps(-0.5f);
  const __m512 high = _mm512_mul_ps(square, minus_half);
  const __m512 low = _mm512_mul_ps(square_error, minus_half);
  const __m512 sum = _mm512_add_ps(high, low);
  // |sum| <= 86 is Gelu8's exponential fast path; NaN fails the compare.
  if (_mm512_cmp_ps_mask(_mm512_abs_ps(sum),
                         _mm512_set1_ps(vector_math_internal::kExpFastLimit),
                         _CMP_LE_OQ) != 0xffff) {
    return false;
  }
  const __m512 four = _mm512_set1_ps(4.0f);
  const __m512 u = _mm512_div_ps(four, _mm512_add_ps(a, four));
  const __m512 u2 = _mm512_mul_ps(u, u);
  const __m512 u4 = _mm512_mul_ps(u2, u2);
  const __m512 u8 = _mm512_mul_ps(u4, u4);
  const __m512 p01 = _mm512_fmadd_ps(_mm512_set1_ps(coefficient::kP1), u,
                                     _mm512_set1_ps(coefficient::kP0));
  const __m512 p23 = _mm512_fmadd_ps(_mm512_set1_ps(coefficient::kP3), u,
                                     _mm512_set1_ps(coefficient::kP2));
  const __m512 p45 = _mm512_fmadd_ps(_mm512_set1_ps(coefficient::kP5), u,
                                     _mm512_set1_ps(coefficient::kP4));
  const __m512 p67 = _mm512_fmadd_ps(_mm512_set1_ps(coefficient::kP7), u,
                                     _mm512_set1_ps(coefficient::kP6));
  const __m512 p89 = _mm512_fmadd_ps(_mm512_set1_ps(coefficient::kP9), u,
                                     _mm512_set1_ps(coefficient::kP8));
  const __m512 p0123 = _mm512_fmadd_ps(p23, u2, p01);
  const __m512 p4567 = _mm512_fmadd_ps(p67, u2, p45);
  const __m512 p = _mm512_fmadd_ps(p89, u8, _mm512_fmadd_ps(p4567, u4, p0123));
  // e^(high + low) as ExpSum's fast path does it.
  const __m512 n = RoundLog2_16(sum);
  __m512 r =
      _mm512_fnmadd_ps(n, _mm512_set1_ps(vector_math_internal::kLn2High), high);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(vector_math_internal::kLn2Low), r);
  r = _mm512_add_ps(r, low);
  *gaussian = TimesPowerOfTwo16(ExpPolynomial16(r), n);
  const __m512 tail = _mm512_mul_ps(_mm512_mul_ps(u, p), *gaussian);
  // Phi = Q where x's sign bit is set, as Gelu8's blendv picks.
  const __mmask16 negative = _mm512_test_epi32_mask(
      _mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  *phi = _mm512_mask_blend_ps(negative,
                              _mm512_sub_ps(_mm512_set1_ps(1.0f), tail), tail);
  return true;
}

// Gelu16() is Gelu8() on sixteen lanes, bit for bit.
KINDLING_AVX512 inline __m512 Gelu16(__m512 x) {
  __m512 phi, gaussian;
  if (!GeluTerms16(x, &phi, &gaussian)) {
    return Halves8(x, [](__m256 half) { return Gelu8(half); });
  }
  return _mm512_mul_ps(x, phi);
}

// GeluAndSlope16() is GeluAndSlope8() on sixteen lanes, bit for bit both;
// GeluSlope16() its slope alone.
KINDLING_AVX512 inline __m512 GeluAndSlope16(__m512 x, __m512* slope) {
  __m512 phi, gaussian;
  if (!GeluTerms16(x, &phi, &gaussian)) {
    __m256 low_slope, high_slope;
    const __m256 low = GeluAndSlope8(LowHalf8(x), &low_slope);
    const __m256 high = GeluAndSlope8(HighHalf8(x), &high_slope);
    *slope = Join8(low_slope, high_slope);
    return Join8(low, high);
  }
  // Every lane is within |x| <= 13 here: no clamp needed.
  *slope = _mm512_fmadd_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(vector_math_internal::kInverseSqrtTwoPi)),
      gaussian, phi);
  return _mm512_mul_ps(x, phi);
}

KINDLING_AVX512 inline __m512 GeluSlope16(__m512 x) {
  __m512 slope;
  GeluAndSlope16(x, &slope);
  return slope;
}
KINDLING_AVX512_END

// Sqrt8() is the correctly rounded square root per lane.
inline __m256 Sqrt8(__m256 x) { return _mm256_sqrt_ps(x); }

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_VECTOR_MATH_H_
