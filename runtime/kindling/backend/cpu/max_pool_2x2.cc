#include "kindling/backend/cpu/max_pool_2x2.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kindling/backend/cpu/max_rule.h"

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
  const __m256 take = ReplacesMax(value, window.best);
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

// kTailStores: a row's last 1..7 windows are not written with AVX2 masked
// stores, which are slow on AMD's cores (with them the backward of the
// example CNN's pools, 14 and 7 windows a row, took longer than a zero
// fill and a scatter). A row of eight windows or more ends with its last
// eight again, overlapping; a shorter row's forward is written with a few
// narrower plain stores (StorePrefix()), and its backward is left to the
// general kernel's scatter, which was faster there. A sixteen-lane AVX-512
// form, whose masked loads and stores took the tails, was slower on the
// same AMD host: on [128, 32, 28, 28], one thread, 0.94 ms against 0.57 ms
// forward (with the ReLU) and 0.70 against 0.45 ms backward, its time in
// the masked loads.

// Relu() applies PoolActivation::kRelu to eight windows: the best becomes
// 0 unless it is > 0 (NaN too), and the returned lanes are all-ones where
// the best is <= 0, the windows that pass no gradient (argmax -1).
inline __m256i Relu(Window& window) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 no_gradient = _mm256_cmp_ps(window.best, zero, _CMP_LE_OQ);
  window.best =
      _mm256_and_ps(window.best, _mm256_cmp_ps(window.best, zero, _CMP_GT_OQ));
  return _mm256_castps_si256(no_gradient);
}

// Cells() turns the offsets of lanes [4 * half, 4 * half + 4) into flat
// cell indices, for windows whose top-left cells are first_cell + 2 * lane,
// and -1 where the matching 32-bit lane of `dropped` is all-ones.
inline __m256i Cells(__m128i offsets, __m128i dropped, int64_t first_cell) {
  const __m256i left = _mm256_add_epi64(_mm256_set1_epi64x(first_cell),
                                        _mm256_setr_epi64x(0, 2, 4, 6));
  return _mm256_or_si256(_mm256_add_epi64(_mm256_cvtepi32_epi64(offsets), left),
                         _mm256_cvtepi32_epi64(dropped));
}

// StorePrefix() writes the first `count` floats of the sixteen in `low`,
// `high` (count < 16) with at most four plain stores, halving the width
// each time (kTailStores).
inline void StorePrefix(__m256 low, __m256 high, int64_t count, float* out) {
  __m256 rest = low;
  if (count >= 8) {
    _mm256_storeu_ps(out, low);
    out += 8, count -= 8, rest = high;
  }
  __m128 quarter = _mm256_castps256_ps128(rest);
  if (count >= 4) {
    _mm_storeu_ps(out, quarter);
    out += 4, count -= 4, quarter = _mm256_extractf128_ps(rest, 1);
  }
  if (count >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(out), quarter);
    out += 2, count -= 2, quarter = _mm_movehl_ps(quarter, quarter);
  }
  if (count >= 1) _mm_store_ss(out, quarter);
}

// StorePrefix() for the first `count` int64s of the eight in `low`, `high`
// (count < 8).
inline void StorePrefix(__m256i low, __m256i high, int64_t count,
                        int64_t* out) {
  __m256i rest = low;
  if (count >= 4) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), low);
    out += 4, count -= 4, rest = high;
  }
  __m128i half = _mm256_castsi256_si128(rest);
  if (count >= 2) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), half);
    out += 2, count -= 2, half = _mm256_extracti128_si256(rest, 1);
  }
  if (count >= 1) _mm_storel_epi64(reinterpret_cast<__m128i*>(out), half);
}

// StoreCells() writes the argmax of eight windows (Cells()) to argmax[0, 8),
// or only the first `count` of them when count < 8.
inline void StoreCells(const Window& window, __m256i dropped,
                       int64_t first_cell, int64_t count, int64_t* argmax) {
  const __m256i low = Cells(_mm256_castsi256_si128(window.offset),
                            _mm256_castsi256_si128(dropped), first_cell);
  const __m256i high =
      Cells(_mm256_extracti128_si256(window.offset, 1),
            _mm256_extracti128_si256(dropped, 1), first_cell + 8);
  if (count >= 8) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(argmax), low);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(argmax + 4), high);
    return;
  }
  StorePrefix(low, high, count, argmax);
}

// StoreCodes() writes the window codes of eight windows pooled with
// offsets 0 1 2 3 (backend.h's kNoWindowCell where `dropped`) to
// codes[0, 8), or only the first `count` of them when count < 8.
inline void StoreCodes(const Window& window, __m256i dropped, int64_t count,
                       uint8_t* codes) {
  const __m256i lanes = _mm256_or_si256(window.offset, dropped);
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(lanes),
                                        _mm256_extracti128_si256(lanes, 1));
  const __m128i bytes = _mm_packs_epi16(words, words);  // -1 -> 255
  if (count >= 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), bytes);
    return;
  }
  alignas(16) uint8_t all[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(all), bytes);
  std::memcpy(codes, all, count);
}

// LaneMask() is all-ones in the 32-bit lanes below `count` (any int64).
inline __m256i LaneMask(int64_t count) {
  const int32_t clamped =
      static_cast<int32_t>(count < 0 ? 0 : (count > 8 ? 8 : count));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(clamped),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// PoolWindows() pools eight windows, whose top-row floats are
// top_lo, top_hi and bottom-row floats bottom_lo, bottom_hi, writing
// `count` (1..8) of them, and their argmax as cells (Index int64_t) or
// window codes (uint8_t).
template <class Index, bool kArgmax, bool kRelu>
inline void PoolWindows(__m256 top_lo, __m256 top_hi, __m256 bottom_lo,
                        __m256 bottom_hi, __m256i width_offset,
                        int64_t first_cell, int64_t count, float* out,
                        Index* argmax) {
  Window window = Pool8(top_lo, top_hi, bottom_lo, bottom_hi, width_offset);
  __m256i dropped = _mm256_setzero_si256();
  if constexpr (kRelu) dropped = Relu(window);
  if (count >= 8) {
    _mm256_storeu_ps(out, window.best);
  } else {
    StorePrefix(window.best, window.best, count, out);
  }
  if constexpr (kArgmax && std::is_same_v<Index, uint8_t>) {
    StoreCodes(window, dropped, count, argmax);
  } else if constexpr (kArgmax) {
    StoreCells(window, dropped, first_cell, count, argmax);
  }
}

template <class Index, bool kArgmax, bool kRelu>
void PoolRow(const float* top, const float* bottom, int64_t out_w,
             int64_t top_cell, int64_t width, float* out, Index* argmax) {
  // A window's bottom row is `width` cells below its top row; in window
  // codes, two.
  const __m256i width_offset = _mm256_set1_epi32(
      std::is_same_v<Index, uint8_t> ? 2 : static_cast<int32_t>(width));
  int64_t ow = 0;
  for (; ow + 8 <= out_w; ow += 8) {
    const float* t = top + 2 * ow;
    const float* b = bottom + 2 * ow;
    PoolWindows<Index, kArgmax, kRelu>(
        _mm256_loadu_ps(t), _mm256_loadu_ps(t + 8), _mm256_loadu_ps(b),
        _mm256_loadu_ps(b + 8), width_offset, top_cell + 2 * ow, 8, out + ow,
        kArgmax ? argmax + ow : nullptr);
  }
  if (ow == out_w) return;
  if (out_w >= 8) {
    // The last eight windows again, overlapping the ones already written
    // with the same values: no partial vector (kTailStores).
    ow = out_w - 8;
    PoolWindows<Index, kArgmax, kRelu>(
        _mm256_loadu_ps(top + 2 * ow), _mm256_loadu_ps(top + 2 * ow + 8),
        _mm256_loadu_ps(bottom + 2 * ow), _mm256_loadu_ps(bottom + 2 * ow + 8),
        width_offset, top_cell + 2 * ow, 8, out + ow,
        kArgmax ? argmax + ow : nullptr);
    return;
  }
  // A row of 1..7 windows: masked loads read only the 2 * rest columns that
  // exist (masked lanes do not fault); only `rest` results are written
  // (kTailStores).
  const int64_t rest = out_w - ow;
  const __m256i low = LaneMask(2 * rest), high = LaneMask(2 * rest - 8);
  const float* t = top + 2 * ow;
  const float* b = bottom + 2 * ow;
  PoolWindows<Index, kArgmax, kRelu>(
      _mm256_maskload_ps(t, low), _mm256_maskload_ps(t + 8, high),
      _mm256_maskload_ps(b, low), _mm256_maskload_ps(b + 8, high), width_offset,
      top_cell + 2 * ow, rest, out + ow, kArgmax ? argmax + ow : nullptr);
}

// Narrow() packs the low 32 bits of the 64-bit lanes of `low` and `high`
// into eight 32-bit lanes, in order.
inline __m256i Narrow(__m256i low, __m256i high) {
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  return _mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(low, even),
                                   _mm256_permutevar8x32_epi32(high, even),
                                   0x20);
}

// WindowOffsets() is, for four windows whose top-left cells are `first`,
// the offset of each argmax from its window's top-left cell, or -1 where
// the argmax lies outside the window's {0, 1, W, W + 1} range (argmax -1).
inline __m256i WindowOffsets(__m256i argmax, __m256i first,
                             __m256i last_offset) {
  const __m256i offset = _mm256_sub_epi64(argmax, first);
  const __m256i outside =
      _mm256_or_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), offset),
                      _mm256_cmpgt_epi64(offset, last_offset));
  return _mm256_or_si256(offset, outside);
}

// StoreInterleaved() writes even[0] odd[0] even[1] odd[1] ... even[7]
// odd[7] to out[0, 16).
inline void StoreInterleaved(__m256 even, __m256 odd, float* out) {
  const __m256 low = _mm256_unpacklo_ps(even, odd);   // windows 0 1 4 5
  const __m256 high = _mm256_unpackhi_ps(even, odd);  // windows 2 3 6 7
  _mm256_storeu_ps(out, _mm256_permute2f128_ps(low, high, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(low, high, 0x31));
}

// Routed() is `grad` in the lanes whose offset equals `entry`, else 0.
inline __m256 Routed(__m256 grad, __m256i offsets, int32_t entry) {
  const __m256 mask = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(offsets, _mm256_set1_epi32(entry)));
  // + 0 as the scatter's 0 + g: a -0 gradient lands as +0.
  return _mm256_add_ps(_mm256_and_ps(grad, mask), _mm256_setzero_ps());
}

// UnpoolWindows() writes the input gradient under eight windows whose
// top-left cells are first_cell + 2 * lane.
inline void UnpoolWindows(const float* grad, const int64_t* argmax,
                          int64_t first_cell, int64_t width, float* top,
                          float* bottom) {
  const auto load_argmax = [&](int64_t first) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(argmax + first));
  };
  const __m256i last_offset = _mm256_set1_epi64x(width + 1);
  const __m256i first = _mm256_add_epi64(_mm256_set1_epi64x(first_cell),
                                         _mm256_setr_epi64x(0, 2, 4, 6));
  const __m256i offsets =
      Narrow(WindowOffsets(load_argmax(0), first, last_offset),
             WindowOffsets(load_argmax(4),
                           _mm256_add_epi64(first, _mm256_set1_epi64x(8)),
                           last_offset));
  const __m256 g = _mm256_loadu_ps(grad);
  const int32_t w = static_cast<int32_t>(width);
  StoreInterleaved(Routed(g, offsets, 0), Routed(g, offsets, 1), top);
  StoreInterleaved(Routed(g, offsets, w), Routed(g, offsets, w + 1), bottom);
}

// UnpoolCodes() is UnpoolWindows() for eight windows' codes.
inline void UnpoolCodes(const float* grad, const uint8_t* codes, float* top,
                        float* bottom) {
  const __m256i offsets = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes)));
  const __m256 g = _mm256_loadu_ps(grad);
  StoreInterleaved(Routed(g, offsets, 0), Routed(g, offsets, 1), top);
  StoreInterleaved(Routed(g, offsets, 2), Routed(g, offsets, 3), bottom);
}

// Is2x2Stride2() is true for 2x2 windows at stride 2, without padding or
// dilation.
bool Is2x2Stride2(const Window2dGeometry& window) {
  return window.kernel[0] == 2 && window.kernel[1] == 2 &&
         window.stride[0] == 2 && window.stride[1] == 2 &&
         window.padding[0] == 0 && window.padding[1] == 0 &&
         window.dilation[0] == 1 && window.dilation[1] == 1;
}

// The argmax offsets within a row are compared in 32-bit lanes.
constexpr int64_t kMaxWidth = int64_t{1} << 30;

}  // namespace

bool FitsMaxPool2x2Row(const Window2dGeometry& window, int64_t width) {
  return Is2x2Stride2(window) && width < kMaxWidth;
}

bool FitsMaxPool2x2(const TensorBase& input, const Window2dGeometry& window) {
  return input.dtype() == DType::kF32 && input.strides()[3] == 1 &&
         FitsMaxPool2x2Row(window, input.shape()[3]);
}

bool FitsMaxPool2x2Backward(const TensorBase& input_grad,
                            const TensorBase& grad,
                            const Window2dGeometry& window) {
  return grad.dtype() == DType::kF32 && grad.strides()[3] == 1 &&
         grad.shape()[3] >= kMinBackwardRowWindows &&
         FitsMaxPool2x2Row(window, input_grad.shape()[3]);
}

void MaxPool2x2BackwardRow(const float* grad, const int64_t* argmax,
                           int64_t out_w, int64_t top_cell, int64_t width,
                           float* top, float* bottom) {
  int64_t ow = 0;
  for (; ow + 8 <= out_w; ow += 8) {
    UnpoolWindows(grad + ow, argmax + ow, top_cell + 2 * ow, width,
                  top + 2 * ow, bottom + 2 * ow);
  }
  if (ow == out_w) return;
  // The last eight windows again, overlapping: the same values written
  // twice, and no partial vector (kTailStores).
  ow = out_w - 8;
  UnpoolWindows(grad + ow, argmax + ow, top_cell + 2 * ow, width, top + 2 * ow,
                bottom + 2 * ow);
}

void MaxPool2x2BackwardCodesRow(const float* grad, const uint8_t* codes,
                                int64_t out_w, float* top, float* bottom) {
  int64_t ow = 0;
  for (; ow + 8 <= out_w; ow += 8) {
    UnpoolCodes(grad + ow, codes + ow, top + 2 * ow, bottom + 2 * ow);
  }
  if (ow == out_w) return;
  ow = out_w - 8;  // overlapping, as MaxPool2x2BackwardRow()
  UnpoolCodes(grad + ow, codes + ow, top + 2 * ow, bottom + 2 * ow);
}

template <class Index>
void PoolRowOf(const float* top, const float* bottom, int64_t out_w,
               int64_t top_cell, int64_t width, bool relu, float* out,
               Index* argmax) {
  using Row = void (*)(const float*, const float*, int64_t, int64_t, int64_t,
                       float*, Index*);
  const Row row =
      argmax != nullptr
          ? (relu ? PoolRow<Index, true, true> : PoolRow<Index, true, false>)
          : (relu ? PoolRow<Index, false, true> : PoolRow<Index, false, false>);
  row(top, bottom, out_w, top_cell, width, out, argmax);
}

void MaxPool2x2Row(const float* top, const float* bottom, int64_t out_w,
                   int64_t top_cell, int64_t width, bool relu, float* out,
                   int64_t* argmax) {
  PoolRowOf(top, bottom, out_w, top_cell, width, relu, out, argmax);
}

void MaxPool2x2CodesRow(const float* top, const float* bottom, int64_t out_w,
                        bool relu, float* out, uint8_t* codes) {
  PoolRowOf(top, bottom, out_w, /*top_cell=*/0, /*width=*/0, relu, out, codes);
}

}  // namespace kindling::cpu
