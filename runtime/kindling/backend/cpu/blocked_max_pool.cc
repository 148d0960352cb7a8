#include "kindling/backend/cpu/blocked_max_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kindling/backend/cpu/max_rule.h"

namespace kindling::cpu {
namespace {

// kBlock: the channels of one block, innermost in nChw16c; each is handled
// as two halves of eight AVX2 lanes.
constexpr int64_t kBlock = 16;
constexpr int64_t kHalf = 8;

// Cells are compared and kept in 32-bit lanes.
constexpr int64_t kMaxPlane = int64_t{1} << 31;

// Best: the running maximum of eight channels' window and the plane's cell
// it came from.
struct Best {
  __m256 value;
  __m256i cell;
};

// Take() lets `value`, from plane cell `cell`, replace the best where it is
// larger, or is the first NaN (MaxPool2d()'s rule).
inline void Take(Best& best, __m256 value, int32_t cell) {
  const __m256 take = ReplacesMax(value, best.value);
  best.value = _mm256_blendv_ps(best.value, value, take);
  best.cell = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(best.cell),
                       _mm256_castsi256_ps(_mm256_set1_epi32(cell)), take));
}

// Routed() is `grad` in the lanes whose argmax is `cell`, else 0; + 0 as
// MaxPool2dBackward's 0 + g, so a -0 gradient lands as +0.
inline __m256 Routed(__m256 grad, __m256i argmax, int32_t cell) {
  const __m256 mask =
      _mm256_castsi256_ps(_mm256_cmpeq_epi32(argmax, _mm256_set1_epi32(cell)));
  return _mm256_add_ps(_mm256_and_ps(grad, mask), _mm256_setzero_ps());
}

// Window: one 2x2 window of a blocked plane: the offsets of its four cells'
// sixteen channels from the plane's start, and their cell indices.
struct Window {
  Window(int64_t oh, int64_t ow, int64_t width)
      : top_left(static_cast<int32_t>(2 * oh * width + 2 * ow)),
        bottom_left(static_cast<int32_t>(top_left + width)) {}

  int64_t offset(int32_t cell) const { return cell * kBlock; }

  int32_t top_left, bottom_left;
};

// PoolHalf() pools window `w` of eight channels of a blocked plane (from
// `plane`, offset to the half's first channel) into `value` and `cell`
// (-1 where kRelu passes no gradient).
inline void PoolHalf(const float* plane, const Window& w, bool relu,
                     float* value, int32_t* cell) {
  const float* top = plane + w.offset(w.top_left);
  const float* bottom = plane + w.offset(w.bottom_left);
  Best best{_mm256_loadu_ps(top), _mm256_set1_epi32(w.top_left)};
  Take(best, _mm256_loadu_ps(top + kBlock), w.top_left + 1);
  Take(best, _mm256_loadu_ps(bottom), w.bottom_left);
  Take(best, _mm256_loadu_ps(bottom + kBlock), w.bottom_left + 1);
  if (relu) {
    // kRelu: 0 unless the maximum is > 0; no argmax where it is <= 0.
    const __m256 zero = _mm256_setzero_ps();
    const __m256 dropped = _mm256_cmp_ps(best.value, zero, _CMP_LE_OQ);
    best.value =
        _mm256_and_ps(best.value, _mm256_cmp_ps(best.value, zero, _CMP_GT_OQ));
    best.cell = _mm256_or_si256(best.cell, _mm256_castps_si256(dropped));
  }
  _mm256_storeu_ps(value, best.value);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(cell), best.cell);
}

// UnpoolHalf() writes the gradient under window `w` of eight channels of a
// blocked plane (from `plane`, offset to the half's first channel): each
// cell grad where it is the channel's argmax `cell`, else 0.
inline void UnpoolHalf(const float* grad, const int32_t* cell, const Window& w,
                       float* plane) {
  const __m256 routed = _mm256_loadu_ps(grad);
  const __m256i argmax =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cell));
  float* top = plane + w.offset(w.top_left);
  float* bottom = plane + w.offset(w.bottom_left);
  _mm256_storeu_ps(top, Routed(routed, argmax, w.top_left));
  _mm256_storeu_ps(top + kBlock, Routed(routed, argmax, w.top_left + 1));
  _mm256_storeu_ps(bottom, Routed(routed, argmax, w.bottom_left));
  _mm256_storeu_ps(bottom + kBlock, Routed(routed, argmax, w.bottom_left + 1));
}

// The sizes of one call's loops.
struct Geometry {
  explicit Geometry(const BlockedPlanes& planes)
      : blocks(planes.samples * (planes.channels / kBlock)),
        width(planes.width),
        out_h(planes.height / 2),
        out_w(planes.width / 2),
        out_plane(out_h * out_w),
        blocked_plane(planes.height * planes.width * kBlock) {}

  int64_t blocks, width, out_h, out_w, out_plane, blocked_plane;
};

// A block's sixteen NCHW planes are adjacent: block b's outputs are the
// 16 * out_plane values from b * 16 * out_plane on, plane by plane. The
// kernels gather or scatter them through a tile [out_plane][16] (channel
// innermost, as the blocked layout), so that memory is read and written in
// order: writing the sixteen planes' rows as each output row completed took
// longer than the pool's arithmetic.

// kPrefetchRows: the forward prefetches the input rows this far below the
// window's top row. Right after the convolution, the pool waited on its
// loads (perf: its time on the instructions after them): one 64-sample
// slab of conv2's output took it 0.5 ms there against 0.17 ms on a buffer
// already in cache, one thread. With the prefetches the example CNN's conv2
// and pool (batch 128, 2 threads) took 1.40-1.46 ms against 1.72-1.76 ms,
// 0.2 ms over the convolution alone; 2 to 8 rows ahead measured alike.
constexpr int64_t kPrefetchRows = 4;

}  // namespace

bool FitsBlockedMaxPool(const BlockedPlanes& planes,
                        const Window2dGeometry& pool) {
  return pool.kernel[0] == 2 && pool.kernel[1] == 2 && pool.stride[0] == 2 &&
         pool.stride[1] == 2 && pool.padding[0] == 0 && pool.padding[1] == 0 &&
         pool.dilation[0] == 1 && pool.dilation[1] == 1 &&
         planes.channels % kBlock == 0 && planes.height % 2 == 0 &&
         planes.width % 2 == 0 && planes.height > 0 && planes.width > 0 &&
         planes.height * planes.width < kMaxPlane;
}

void MaxPoolBlocked16(const float* blocked, const BlockedPlanes& planes,
                      PoolActivation activation, float* out, int64_t* argmax) {
  const Geometry g(planes);
  const bool relu = activation == PoolActivation::kRelu;
  std::vector<float> values(g.out_plane * kBlock);
  std::vector<int32_t> cells(g.out_plane * kBlock);
  for (int64_t block = 0; block < g.blocks; ++block) {
    const float* plane = blocked + block * g.blocked_plane;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      // The two input rows kPrefetchRows below: written out here, since
      // GCC takes a function holding only prefetches for one without
      // effects and drops its calls.
      const int64_t ahead =
          block * g.blocked_plane + (2 * oh + kPrefetchRows) * g.width * kBlock;
      const int64_t ahead_end =
          std::min(g.blocks * g.blocked_plane, ahead + 2 * g.width * kBlock);
      for (int64_t i = ahead; i < ahead_end; i += kBlock) {
        _mm_prefetch(reinterpret_cast<const char*>(blocked + i), _MM_HINT_T0);
      }
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t at = (oh * g.out_w + ow) * kBlock;
        for (int64_t half = 0; half < kBlock; half += kHalf) {
          PoolHalf(plane + half, Window(oh, ow, g.width), relu,
                   &values[at + half], &cells[at + half]);
        }
      }
    }
    const int64_t first = block * kBlock * g.out_plane;
    for (int64_t c = 0; c < kBlock; ++c) {
      float* out_plane = out + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        out_plane[p] = values[p * kBlock + c];
      }
      if (argmax == nullptr) continue;
      int64_t* argmax_plane = argmax + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        argmax_plane[p] = cells[p * kBlock + c];
      }
    }
  }
}

void UnpoolBlocked16(const float* grad, const int64_t* argmax,
                     const BlockedPlanes& planes, float* blocked) {
  const Geometry g(planes);
  std::vector<float> grads(g.out_plane * kBlock);
  std::vector<int32_t> cells(g.out_plane * kBlock);
  for (int64_t block = 0; block < g.blocks; ++block) {
    const int64_t first = block * kBlock * g.out_plane;
    for (int64_t c = 0; c < kBlock; ++c) {
      const float* grad_plane = grad + first + c * g.out_plane;
      const int64_t* argmax_plane = argmax + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        grads[p * kBlock + c] = grad_plane[p];
        // Cells fit 32 bits (kMaxPlane); -1 stays -1 and matches no cell.
        cells[p * kBlock + c] = static_cast<int32_t>(argmax_plane[p]);
      }
    }
    float* plane = blocked + block * g.blocked_plane;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t at = (oh * g.out_w + ow) * kBlock;
        for (int64_t half = 0; half < kBlock; half += kHalf) {
          UnpoolHalf(&grads[at + half], &cells[at + half],
                     Window(oh, ow, g.width), plane + half);
        }
      }
    }
  }
}

}  // namespace kindling::cpu
