#include "kindling/backend/cpu/small_patch_products.h"

#include <immintrin.h>

#include <cstdint>

#include "kindling/backend/cpu/vector_math.h"

namespace kindling::cpu {
namespace {

constexpr int64_t kLanes = 8;  // floats in an AVX2 vector
static_assert(kLanes == kGradientLanes);
// A partial sum per tap, the bias's, g's and a column's vectors: 15 of the
// 16 registers.
static_assert(kMaxSmallPatch + 3 <= 16);

// TailMask() has lanes [0, count) set (count in [1, 8]).
__m256i TailMask(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane);
}

// Load() reads the vector at p, or (tail) only the lanes of `mask`, with
// zeros elsewhere: a tail then adds 0 x 0 in its unused lanes.
__m256 Load(const float* p, bool tail, __m256i mask) {
  return tail ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
}

// AccumulateRow() adds g_row . column_k over positions [begin, positions)
// to tap k's partial sums (taps of them, none when weight_lanes is null) and
// g_row's sum to the bias's (when bias_lanes is not null).
void AccumulateRow(const float* g_row, const float* columns, int64_t positions,
                   int64_t begin, int taps, float* weight_lanes,
                   float* bias_lanes) {
  __m256 acc[kMaxSmallPatch];
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    acc[t] = _mm256_loadu_ps(weight_lanes + t * kLanes);
  }
  __m256 bias_acc =
      bias_lanes != nullptr ? _mm256_loadu_ps(bias_lanes) : _mm256_setzero_ps();
  const int64_t full = begin + (positions - begin) / kLanes * kLanes;
  const __m256i mask = TailMask(positions > full ? positions - full : kLanes);
  const auto step = [&](int64_t l, bool tail) {
    const __m256 g = Load(g_row + l, tail, mask);
    bias_acc = _mm256_add_ps(bias_acc, g);
    for (int t = 0; t < kMaxSmallPatch; ++t) {
      if (t >= taps) break;
      acc[t] = _mm256_fmadd_ps(g, Load(columns + t * positions + l, tail, mask),
                               acc[t]);
    }
  };
  for (int64_t l = begin; l < full; l += kLanes) step(l, false);
  if (full < positions) step(full, true);
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    _mm256_storeu_ps(weight_lanes + t * kLanes, acc[t]);
  }
  if (bias_lanes != nullptr) _mm256_storeu_ps(bias_lanes, bias_acc);
}

// AccumulateRow16() is AccumulateRow() sixteen positions a step (AVX-512,
// full vectors only), for the row's first positions / 16 * 16 positions:
// each tap's sixteen partial sums start at 0, and their two halves are
// added into the tap's eight lanes at the end of the row. It returns the
// number of positions it took; AccumulateRow() takes the rest. On the
// example CNN's conv1 (784 positions a row, no rest; batch 128, 2 threads,
// AMD Zen 5, benches/conv_bench) the layer's backward took 0.32-0.33 ms
// against 0.44-0.45 ms with eight lanes.
KINDLING_AVX512_BEGIN
// FoldInto() adds the two halves of sixteen partial sums to eight `lanes`.
KINDLING_AVX512 inline void FoldInto(__m512 sums, float* lanes) {
  const __m256 low = _mm512_castps512_ps256(sums);
  const __m256 high =
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sums), 1));
  _mm256_storeu_ps(
      lanes, _mm256_add_ps(_mm256_loadu_ps(lanes), _mm256_add_ps(low, high)));
}

KINDLING_AVX512 int64_t AccumulateRow16(const float* g_row,
                                        const float* columns, int64_t positions,
                                        int taps, float* weight_lanes,
                                        float* bias_lanes) {
  const int64_t full = positions / 16 * 16;
  if (full == 0) return 0;
  __m512 acc[kMaxSmallPatch];
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    acc[t] = _mm512_setzero_ps();
  }
  __m512 bias_acc = _mm512_setzero_ps();
  for (int64_t l = 0; l < full; l += 16) {
    const __m512 g = _mm512_loadu_ps(g_row + l);
    bias_acc = _mm512_add_ps(bias_acc, g);
    for (int t = 0; t < kMaxSmallPatch; ++t) {
      if (t >= taps) break;
      acc[t] = _mm512_fmadd_ps(g, _mm512_loadu_ps(columns + t * positions + l),
                               acc[t]);
    }
  }
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    FoldInto(acc[t], weight_lanes + t * kLanes);
  }
  if (bias_lanes != nullptr) FoldInto(bias_acc, bias_lanes);
  return full;
}
KINDLING_AVX512_END

}  // namespace

void SmallPatchAccumulate(const float* g, const float* columns,
                          int64_t out_channels, int64_t patch,
                          int64_t positions, const SmallPatchGradients& lanes) {
  const int taps = lanes.weight_lanes != nullptr ? static_cast<int>(patch) : 0;
  const bool avx512 = HasAvx512();
  for (int64_t o = 0; o < out_channels; ++o) {
    const float* g_row = g + o * positions;
    float* weight_lanes =
        taps > 0 ? lanes.weight_lanes + o * patch * kLanes : nullptr;
    float* bias_lanes =
        lanes.bias_lanes != nullptr ? lanes.bias_lanes + o * kLanes : nullptr;
    const int64_t done = avx512
                             ? AccumulateRow16(g_row, columns, positions, taps,
                                               weight_lanes, bias_lanes)
                             : 0;
    if (done == positions) continue;
    AccumulateRow(g_row, columns, positions, done, taps, weight_lanes,
                  bias_lanes);
  }
}

void SumLanes(const float* lanes, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    float sum = lanes[i * kLanes];
    for (int64_t lane = 1; lane < kLanes; ++lane) {
      sum += lanes[i * kLanes + lane];
    }
    out[i] = sum;
  }
}

}  // namespace kindling::cpu
