// ReplacesMax: max pooling's rule for which value wins a window, eight
// lanes at a time (the AVX2 pool kernels of max_pool_2x2.h and
// blocked_max_pool.h).
#ifndef KINDLING_BACKEND_CPU_MAX_RULE_H_
#define KINDLING_BACKEND_CPU_MAX_RULE_H_

#include <immintrin.h>

namespace kindling::cpu {

// ReplacesMax() is all-ones in the lanes where `value`, a later cell of the
// window, takes the place of the running maximum `best`: where it is larger,
// or is the first NaN (Backend::MaxPool2d's rule: a tie keeps the earlier
// cell, and a NaN is never replaced).
inline __m256 ReplacesMax(__m256 value, __m256 best) {
  const __m256 larger = _mm256_cmp_ps(value, best, _CMP_GT_OQ);
  const __m256 first_nan =
      _mm256_andnot_ps(_mm256_cmp_ps(best, best, _CMP_UNORD_Q),
                       _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
  return _mm256_or_ps(larger, first_nan);
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_MAX_RULE_H_
