#include "kindling/backend/cpu/small_patch_products.h"

#include <immintrin.h>

#include <cstdint>

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

// AccumulateRow() adds g_row . column_k to tap k's partial sums (taps of
// them, none when weight_lanes is null) and g_row's sum to the bias's (when
// bias_lanes is not null).
void AccumulateRow(const float* g_row, const float* columns, int64_t positions,
                   int taps, float* weight_lanes, float* bias_lanes) {
  __m256 acc[kMaxSmallPatch];
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    acc[t] = _mm256_loadu_ps(weight_lanes + t * kLanes);
  }
  __m256 bias_acc =
      bias_lanes != nullptr ? _mm256_loadu_ps(bias_lanes) : _mm256_setzero_ps();
  const int64_t full = positions / kLanes * kLanes;
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
  for (int64_t l = 0; l < full; l += kLanes) step(l, false);
  if (full < positions) step(full, true);
  for (int t = 0; t < kMaxSmallPatch; ++t) {
    if (t >= taps) break;
    _mm256_storeu_ps(weight_lanes + t * kLanes, acc[t]);
  }
  if (bias_lanes != nullptr) _mm256_storeu_ps(bias_lanes, bias_acc);
}

}  // namespace

void SmallPatchAccumulate(const float* g, const float* columns,
                          int64_t out_channels, int64_t patch,
                          int64_t positions, const SmallPatchGradients& lanes) {
  const int taps = lanes.weight_lanes != nullptr ? static_cast<int>(patch) : 0;
  for (int64_t o = 0; o < out_channels; ++o) {
    AccumulateRow(
        g + o * positions, columns, positions, taps,
        taps > 0 ? lanes.weight_lanes + o * patch * kLanes : nullptr,
        lanes.bias_lanes != nullptr ? lanes.bias_lanes + o * kLanes : nullptr);
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
