#include "kindling/backend/cpu/max_pool_2x2.h"

#include <immintrin.h>

#include <cstdint>

namespace kindling::cpu {
namespace {

// The lane order after splitting 16 columns into even and odd ones with
// _mm256_shuffle_ps: outputs 0 1 4 5 | 2 3 6 7. Swapping the middle 64-bit
// quarters restores 0..7.
constexpr int kRestoreLaneOrder = 0xD8;

// Window: the running maximum of eight window positions and, per lane, the
// offset of the winning cell from the window's top-left cell.
struct Window {
  __m256 best;
  __m256i offset;
};

// Take() lets `value` replace the best where it is larger, or is the first
// NaN (the general kernel's rule).
inline void Take(Window& window, __m256 value, __m256i offset) {
  const __m256 larger = _mm256_cmp_ps(value, window.best, _CMP_GT_OQ);
  const __m256 first_nan =
      _mm256_andnot_ps(_mm256_cmp_ps(window.best, window.best, _CMP_UNORD_Q),
                       _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
  const __m256 take = _mm256_or_ps(larger, first_nan);
  window.best = _mm256_blendv_ps(window.best, value, take);
  window.offset = _mm256_castps_si256(_mm256_blendv_ps(
      _mm256_castsi256_ps(window.offset), _mm256_castsi256_ps(offset), take));
}

// Pool8() reduces eight 2x2 windows whose sixteen top-row floats are
// top_lo, top_hi and bottom-row floats bottom_lo, bottom_hi.
inline Window Pool8(__m256 top_lo, __m256 top_hi, __m256 bottom_lo,
                    __m256 bottom_hi, __m256i width_offset) {
  Window window{_mm256_shuffle_ps(top_lo, top_hi, 0x88),
                _mm256_setzero_si256()};
  Take(window, _mm256_shuffle_ps(top_lo, top_hi, 0xDD), _mm256_set1_epi32(1));
  Take(window, _mm256_shuffle_ps(bottom_lo, bottom_hi, 0x88), width_offset);
  Take(window, _mm256_shuffle_ps(bottom_lo, bottom_hi, 0xDD),
       _mm256_add_epi32(width_offset, _mm256_set1_epi32(1)));
  window.best = _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(window.best), kRestoreLaneOrder));
  window.offset = _mm256_permute4x64_epi64(window.offset, kRestoreLaneOrder);
  return window;
}

// Cells() turns the offsets of lanes [4 * half, 4 * half + 4) into flat
// cell indices, for windows whose top-left cells are first_cell + 2 * lane.
inline __m256i Cells(__m128i offsets, int64_t first_cell) {
  const __m256i left = _mm256_add_epi64(_mm256_set1_epi64x(first_cell),
                                        _mm256_setr_epi64x(0, 2, 4, 6));
  return _mm256_add_epi64(_mm256_cvtepi32_epi64(offsets), left);
}

// LaneMask() is all-ones in the 32-bit lanes below `count` (any int64).
inline __m256i LaneMask(int64_t count) {
  const int32_t clamped =
      static_cast<int32_t>(count < 0 ? 0 : (count > 8 ? 8 : count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clamped),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Quad64Mask() is all-ones in the 64-bit lanes l (of 4) with first + l below
// `count`.
inline __m256i Quad64Mask(int64_t count, int64_t first) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(count - first),
                            _mm256_setr_epi64x(0, 1, 2, 3));
}

template <bool kArgmax>
void PoolRow(const float* top, const float* bottom, int64_t out_w,
             int64_t top_cell, int64_t width, float* out, int64_t* argmax) {
  const __m256i width_offset = _mm256_set1_epi32(static_cast<int32_t>(width));
  int64_t ow = 0;
  for (; ow + 8 <= out_w; ow += 8) {
    const float* t = top + 2 * ow;
    const float* b = bottom + 2 * ow;
    const Window window =
        Pool8(_mm256_loadu_ps(t), _mm256_loadu_ps(t + 8), _mm256_loadu_ps(b),
              _mm256_loadu_ps(b + 8), width_offset);
    _mm256_storeu_ps(out + ow, window.best);
    if constexpr (kArgmax) {
      const int64_t first = top_cell + 2 * ow;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(argmax + ow),
                          Cells(_mm256_castsi256_si128(window.offset), first));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(argmax + ow + 4),
          Cells(_mm256_extracti128_si256(window.offset, 1), first + 8));
    }
  }
  if (ow == out_w) return;
  // The last 1..7 windows: masked loads read only the 2 * rest columns that
  // exist (masked lanes do not fault), masked stores write only `rest`.
  const int64_t rest = out_w - ow;
  const __m256i low = LaneMask(2 * rest), high = LaneMask(2 * rest - 8);
  const float* t = top + 2 * ow;
  const float* b = bottom + 2 * ow;
  const Window window =
      Pool8(_mm256_maskload_ps(t, low), _mm256_maskload_ps(t + 8, high),
            _mm256_maskload_ps(b, low), _mm256_maskload_ps(b + 8, high),
            width_offset);
  _mm256_maskstore_ps(out + ow, LaneMask(rest), window.best);
  if constexpr (kArgmax) {
    const int64_t first = top_cell + 2 * ow;
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(argmax + ow),
                           Quad64Mask(rest, 0),
                           Cells(_mm256_castsi256_si128(window.offset), first));
    _mm256_maskstore_epi64(
        reinterpret_cast<long long*>(argmax + ow + 4), Quad64Mask(rest, 4),
        Cells(_mm256_extracti128_si256(window.offset, 1), first + 8));
  }
}

}  // namespace

bool FitsMaxPool2x2(const TensorBase& input, const Window2dGeometry& window) {
  return input.dtype() == DType::kF32 && input.strides()[3] == 1 &&
         input.shape()[3] < (int64_t{1} << 30) && window.kernel[0] == 2 &&
         window.kernel[1] == 2 && window.stride[0] == 2 &&
         window.stride[1] == 2 && window.padding[0] == 0 &&
         window.padding[1] == 0 && window.dilation[0] == 1 &&
         window.dilation[1] == 1;
}

void MaxPool2x2Row(const float* top, const float* bottom, int64_t out_w,
                   int64_t top_cell, int64_t width, float* out,
                   int64_t* argmax) {
  if (argmax != nullptr) {
    PoolRow<true>(top, bottom, out_w, top_cell, width, out, argmax);
  } else {
    PoolRow<false>(top, bottom, out_w, top_cell, width, out, nullptr);
  }
}

}  // namespace kindling::cpu
