#include "kindling/backend/cpu/blocked_max_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kindling/backend/cpu/max_rule.h"

namespace kindling::cpu {
namespace {

// kLanes: the channels one AVX2 vector holds; a block (planes.block, 8 or
// 16 channels innermost) is handled as one or two such groups.
constexpr int64_t kLanes = 8;

// Best: the running maximum of eight channels' window and the window code
// (backend.h: 0 1 / 2 3) of the cell it came from.
struct Best {
  __m256 value;
  __m256i code;
};

// Take() lets `value`, from the window's cell `code`, replace the best where
// it is larger, or is the first NaN (MaxPool2d()'s rule).
inline void Take(Best& best, __m256 value, int32_t code) {
  const __m256 take = ReplacesMax(value, best.value);
  best.value = _mm256_blendv_ps(best.value, value, take);
  best.code = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(best.code),
                       _mm256_castsi256_ps(_mm256_set1_epi32(code)), take));
}

// Routed() is `grad` in the lanes whose code is `code`, else 0; + 0 as
// MaxPool2dBackward's 0 + g, so a -0 gradient lands as +0.
inline __m256 Routed(__m256 grad, __m256i codes, int32_t code) {
  const __m256 mask =
      _mm256_castsi256_ps(_mm256_cmpeq_epi32(codes, _mm256_set1_epi32(code)));
  return _mm256_add_ps(_mm256_and_ps(grad, mask), _mm256_setzero_ps());
}

// Window: one 2x2 window of a blocked plane of `block` channels a cell: the
// offsets of its top row's and bottom row's first cells from the plane's
// start, and of a cell's right neighbour.
struct Window {
  Window(int64_t oh, int64_t ow, int64_t width, int64_t block)
      : top((2 * oh * width + 2 * ow) * block),
        bottom(top + width * block),
        next(block) {}

  int64_t top, bottom, next;  // floats
};

// PoolLanes() pools window `w` of eight channels of a blocked plane (from
// `plane`, offset to the group's first channel) into `value` and `code`
// (-1, which becomes kNoWindowCell, where kRelu passes no gradient).
inline void PoolLanes(const float* plane, const Window& w, bool relu,
                      float* value, int32_t* code) {
  const float* top = plane + w.top;
  const float* bottom = plane + w.bottom;
  Best best{_mm256_loadu_ps(top), _mm256_setzero_si256()};
  Take(best, _mm256_loadu_ps(top + w.next), 1);
  Take(best, _mm256_loadu_ps(bottom), 2);
  Take(best, _mm256_loadu_ps(bottom + w.next), 3);
  if (relu) {
    // kRelu: 0 unless the maximum is > 0; no argmax where it is <= 0.
    const __m256 zero = _mm256_setzero_ps();
    const __m256 dropped = _mm256_cmp_ps(best.value, zero, _CMP_LE_OQ);
    best.value =
        _mm256_and_ps(best.value, _mm256_cmp_ps(best.value, zero, _CMP_GT_OQ));
    best.code = _mm256_or_si256(best.code, _mm256_castps_si256(dropped));
  }
  _mm256_storeu_ps(value, best.value);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(code), best.code);
}

// UnpoolLanes() writes the gradient under window `w` of eight channels of a
// blocked plane (from `plane`, offset to the group's first channel): each
// cell grad where it is the channel's window code `code`, else 0.
inline void UnpoolLanes(const float* grad, const int32_t* code, const Window& w,
                        float* plane) {
  const __m256 routed = _mm256_loadu_ps(grad);
  const __m256i codes =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(code));
  float* top = plane + w.top;
  float* bottom = plane + w.bottom;
  _mm256_storeu_ps(top, Routed(routed, codes, 0));
  _mm256_storeu_ps(top + w.next, Routed(routed, codes, 1));
  _mm256_storeu_ps(bottom, Routed(routed, codes, 2));
  _mm256_storeu_ps(bottom + w.next, Routed(routed, codes, 3));
}

// The sizes of one call's loops.
struct Geometry {
  explicit Geometry(const BlockedPlanes& planes)
      : block(planes.block),
        blocks(planes.samples * (planes.channels / block)),
        width(planes.width),
        out_h(planes.height / 2),
        out_w(planes.width / 2),
        out_plane(out_h * out_w),
        blocked_plane(planes.height * planes.width * block) {}

  Window WindowAt(int64_t oh, int64_t ow) const {
    return Window(oh, ow, width, block);
  }

  int64_t block, blocks, width, out_h, out_w, out_plane, blocked_plane;
};

// A block's NCHW planes are adjacent: block b's outputs are the
// block * out_plane values from b * block * out_plane on, plane by plane.
// The kernels gather or scatter them through a tile [out_plane][block]
// (channel innermost, as the blocked layout), so that memory is read and
// written in order: writing the sixteen planes' rows as each output row
// completed took longer than the pool's arithmetic.

// kPrefetchRows: the forward prefetches the input rows this far below the
// window's top row. Right after the convolution, the pool waited on its
// loads (perf: its time on the instructions after them): one 64-sample
// slab of conv2's output took it 0.5 ms there against 0.17 ms on a buffer
// already in cache, one thread. With the prefetches the example CNN's conv2
// and pool (batch 128, 2 threads) took 1.40-1.46 ms against 1.72-1.76 ms,
// 0.2 ms over the convolution alone; 2 to 8 rows ahead measured alike.
constexpr int64_t kPrefetchRows = 4;
constexpr int64_t kFloatsPerLine = 16;  // a 64-byte cache line

}  // namespace

bool FitsBlockedMaxPool(const BlockedPlanes& planes,
                        const Window2dGeometry& pool) {
  return pool.kernel[0] == 2 && pool.kernel[1] == 2 && pool.stride[0] == 2 &&
         pool.stride[1] == 2 && pool.padding[0] == 0 && pool.padding[1] == 0 &&
         pool.dilation[0] == 1 && pool.dilation[1] == 1 &&
         (planes.block == 8 || planes.block == 16) &&
         planes.channels % planes.block == 0 && planes.height % 2 == 0 &&
         planes.width % 2 == 0 && planes.height > 0 && planes.width > 0;
}

void MaxPoolBlocked(const float* blocked, const BlockedPlanes& planes,
                    PoolActivation activation, float* out, uint8_t* codes) {
  const Geometry g(planes);
  const int64_t block_size = g.block;
  const bool relu = activation == PoolActivation::kRelu;
  std::vector<float> values(g.out_plane * block_size);
  std::vector<int32_t> window_codes(g.out_plane * block_size);
  for (int64_t block = 0; block < g.blocks; ++block) {
    const float* plane = blocked + block * g.blocked_plane;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      // The two input rows kPrefetchRows below: written out here, since
      // GCC takes a function holding only prefetches for one without
      // effects and drops its calls.
      const int64_t row = g.width * block_size;
      const int64_t ahead =
          block * g.blocked_plane + (2 * oh + kPrefetchRows) * row;
      const int64_t ahead_end =
          std::min(g.blocks * g.blocked_plane, ahead + 2 * row);
      for (int64_t i = ahead; i < ahead_end; i += kFloatsPerLine) {
        _mm_prefetch(reinterpret_cast<const char*>(blocked + i), _MM_HINT_T0);
      }
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t at = (oh * g.out_w + ow) * block_size;
        for (int64_t lane = 0; lane < block_size; lane += kLanes) {
          PoolLanes(plane + lane, g.WindowAt(oh, ow), relu, &values[at + lane],
                    &window_codes[at + lane]);
        }
      }
    }
    const int64_t first = block * block_size * g.out_plane;
    for (int64_t c = 0; c < block_size; ++c) {
      float* out_plane = out + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        out_plane[p] = values[p * block_size + c];
      }
      if (codes == nullptr) continue;
      uint8_t* codes_plane = codes + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        // 0..3, or -1: kNoWindowCell.
        codes_plane[p] = static_cast<uint8_t>(window_codes[p * block_size + c]);
      }
    }
  }
}

void UnpoolBlocked(const float* grad, const uint8_t* codes,
                   const BlockedPlanes& planes, float* blocked) {
  const Geometry g(planes);
  const int64_t block_size = g.block;
  std::vector<float> grads(g.out_plane * block_size);
  std::vector<int32_t> window_codes(g.out_plane * block_size);
  for (int64_t block = 0; block < g.blocks; ++block) {
    const int64_t first = block * block_size * g.out_plane;
    for (int64_t c = 0; c < block_size; ++c) {
      const float* grad_plane = grad + first + c * g.out_plane;
      const uint8_t* codes_plane = codes + first + c * g.out_plane;
      for (int64_t p = 0; p < g.out_plane; ++p) {
        grads[p * block_size + c] = grad_plane[p];
        // kNoWindowCell matches no cell.
        window_codes[p * block_size + c] = codes_plane[p];
      }
    }
    float* plane = blocked + block * g.blocked_plane;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t at = (oh * g.out_w + ow) * block_size;
        for (int64_t lane = 0; lane < block_size; lane += kLanes) {
          UnpoolLanes(&grads[at + lane], &window_codes[at + lane],
                      g.WindowAt(oh, ow), plane + lane);
        }
      }
    }
  }
}

}  // namespace kindling::cpu
