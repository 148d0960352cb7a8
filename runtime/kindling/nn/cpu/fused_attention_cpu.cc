// The CPU's fused attention kernels (nn/fused_attention.h), f32 and f64.
//
// The exponentials run sixteen floats at a time where the CPU has AVX-512
// (Exp16), else eight (Exp8), with the masks as one bit per key.
//
// Forward, per (head, tile of kTile queries): for each block of kKeyBlock
// keys, S = q k^T (one GEMM), scaled and masked; an online softmax keeps each
// row's running max m and sum l and rescales the output accumulator when m
// grows, then adds P v (a second GEMM). The output is the accumulator / l
// and the row's log-sum-exp m + log l is kept for the backward.
//
// Backward, per head (heads in parallel; within a head the tiles run in
// turn, so dq, dk and dv need no atomics): D_i = dO_i . O_i; for each
// (key tile, block of queries) the weights are recomputed as
// P = exp(S - lse), then dv += P^T dO, dP = dO v^T, dS = P (dP - D) scale,
// dq += dS k, dk += dS^T q: five GEMMs on [kQueryBlock, kTile] blocks.
// Nothing of size T x S is ever allocated.
//
// The products go through TileProduct (attention_products.h): for f32,
// panels of rows (eight with AVX-512, six with AVX2) that, under the causal
// mask, compute only the keys each panel's queries see; the softmax and the
// recomputed weights then skip the chunks of keys (sixteen or eight) past a
// row's last seen key.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/onednn_common.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/nn/cpu/attention_products.h"
#include "kindling/nn/fused_attention.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::nn {
namespace {

using cpu::GemmAccumulate;
using Bound = ProductBound::Kind;

constexpr int64_t kTile = 64;
// The forward's blocks of keys are four tiles wide: at T = 2048 (causal,
// batch 4, 4 heads of 32, benches/attention_bench) the forward with 256-key
// blocks took 0.75-0.78x the time it took with 64-key ones, whose two small
// GEMMs per block paid oneDNN's fixed cost per call four times as often.
constexpr int64_t kKeyBlock = 256;
constexpr int64_t kWordsPerBlock = kKeyBlock / 64;
// The backward's blocks of queries, likewise: against each tile of kTile
// keys, 256 queries at a time. The forward and backward at T = 2048 took
// 0.81-0.86x the time they took with 64-query tiles (the backward about
// 0.73x), at T = 512 0.66-0.86x.
constexpr int64_t kQueryBlock = 256;

// ExpRow() sets row[c] = e^(row[c] * multiplier - shift) for c < count
// (f64's rows; f32's take the eight- and sixteen-lane functions below).
template <class T>
void ExpRow(T* row, int64_t count, T multiplier, T shift) {
  for (int64_t c = 0; c < count; ++c) {
    row[c] = std::exp(row[c] * multiplier - shift);
  }
}

// Masks: which (query, key) pairs attention skips.
struct Masks {
  bool causal;
  const bool* padding;  // [B, S] or null
  int64_t keys;

  bool Skips(int64_t batch, int64_t query, int64_t key) const {
    return (causal && key > query) ||
           (padding != nullptr && padding[batch * keys + key]);
  }
  // SeenKeys() is how many of the `cols` keys from k0 `query` may see: all
  // of them but for the causal mask (padding may hide more).
  int64_t SeenKeys(int64_t query, int64_t k0, int64_t cols) const {
    return causal ? std::clamp<int64_t>(query - k0 + 1, 0, cols) : cols;
  }
  // KeyEnd() is one past the last key a tile of queries ending before
  // `query_end` may see.
  int64_t KeyEnd(int64_t query_end) const {
    return causal ? std::min(keys, query_end) : keys;
  }
};

Masks MasksOf(const FusedAttentionShape& shape,
              const FusedAttentionTensors& t) {
  return {shape.causal,
          t.padding.defined() ? t.padding.data_as<const bool>() : nullptr,
          shape.keys};
}

// HeadRows: one head's rows of a [B, H, L, D] operand whose last dimension
// has unit stride: row i starts at data + i * stride. The projections'
// [B, L, H, D] layout is read and written in place this way (a row stride
// of H * D), so no head is copied into or out of a layout of its own.
template <class T>
struct HeadRows {
  T* data;
  int64_t stride;

  T* Row(int64_t i) const { return data + i * stride; }
};

// RowsOf() is head `bh` (batch bh / H, head bh % H) of `x`.
template <class T>
HeadRows<T> RowsOf(const TensorBase& x, const FusedAttentionShape& shape,
                   int64_t bh) {
  const int64_t batch = bh / shape.heads, head = bh % shape.heads;
  // A single row's stride is never stepped; BLAS still wants it >= D.
  const int64_t stride = x.shape()[2] > 1 ? x.strides()[2] : x.shape()[3];
  return {x.data_as<T>() + batch * x.strides()[0] + head * x.strides()[1],
          stride};
}

// FillRows() zeroes `width` floats of rows [begin, end).
template <class T>
void FillRows(const HeadRows<T>& rows, int64_t begin, int64_t end,
              int64_t width) {
  for (int64_t i = begin; i < end; ++i) {
    std::fill(rows.Row(i), rows.Row(i) + width, T{0});
  }
}

// ForwardTile's state for one tile of queries against one block of keys:
// s holds the block's scores q k^T, rows x cols, dense (with a stride of
// kKeyBlock whatever the block's width, the forward at T = 128 took 2-3x
// the time); m and l are each query's running max and sum, acc its output
// accumulator.
template <class T>
struct ScoreTile {
  int64_t batch, q0, rows, k0, cols, dv;
  T scale;
  T* s;
  T* m;
  T* l;
  T* acc;
};

// Folds the rescale of the rows' earlier keys into l and acc once a row's
// maximum moved from m to m_new.
template <class T>
void UpdateRow(const ScoreTile<T>& tile, int64_t r, T m_new, T sum) {
  const T rescale = std::exp(tile.m[r] - m_new);  // 0 on the first keys
  tile.l[r] = tile.l[r] * rescale + sum;
  tile.m[r] = m_new;
  if (rescale == T{1}) return;
  T* acc_row = tile.acc + r * tile.dv;
  for (int64_t d = 0; d < tile.dv; ++d) acc_row[d] *= rescale;
}

// SoftmaxRows() turns each row of the tile's scores into the weights
// e^(s * scale - m_new) of the online softmax (0 where masked), with
// m_new the row's new running max, and updates m, l and acc (f64; f32 runs
// SoftmaxRows8 or SoftmaxRows16).
template <class T>
void SoftmaxRows(const Masks& masks, const ScoreTile<T>& tile) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < tile.rows; ++r) {
    T* row = tile.s + r * tile.cols;
    T row_max = kNegInf;
    for (int64_t c = 0; c < tile.cols; ++c) {
      row[c] = masks.Skips(tile.batch, tile.q0 + r, tile.k0 + c)
                   ? kNegInf
                   : row[c] * tile.scale;
      row_max = std::max(row_max, row[c]);
    }
    const T m_new = std::max(tile.m[r], row_max);
    if (m_new == kNegInf) {  // every key so far masked: nothing to add
      std::fill(row, row + tile.cols, T{0});
      continue;
    }
    ExpRow<T>(row, tile.cols, T{1}, m_new);
    T sum = 0;
    for (int64_t c = 0; c < tile.cols; ++c) sum += row[c];
    UpdateRow(tile, r, m_new, sum);
  }
}

// KeptKeys() has bit c set when key k0 + c of a tile of `cols` keys of
// `batch` is not padding.
uint64_t KeptKeys(const Masks& masks, int64_t batch, int64_t k0, int64_t cols) {
  static_assert(kTile <= 64, "one bit per key of a tile");
  uint64_t kept = cols == 64 ? ~uint64_t{0} : (uint64_t{1} << cols) - 1;
  if (masks.padding == nullptr) return kept;
  const bool* padding = masks.padding + batch * masks.keys + k0;
  for (int64_t c = 0; c < cols; ++c) {
    if (padding[c]) kept &= ~(uint64_t{1} << c);
  }
  return kept;
}

// RowKeptKeys() is `tile_kept` (KeptKeys of the tile from k0) less the keys
// the causal mask hides from `query`.
uint64_t RowKeptKeys(const Masks& masks, uint64_t tile_kept, int64_t query,
                     int64_t k0) {
  if (!masks.causal) return tile_kept;
  const int64_t visible = query - k0 + 1;  // keys k0 + c <= query
  if (visible >= 64) return tile_kept;
  return visible <= 0 ? 0 : tile_kept & ((uint64_t{1} << visible) - 1);
}

// ChunkInRow() is the lanes of chunk j (floats [16 j, 16 j + 16)) inside a
// row of `cols`: the tiles' rows are dense, so a row's last chunk may not
// write into the next row.
__mmask16 ChunkInRow(int64_t cols, int64_t j) {
  return cpu::FirstLanes16(cols - 16 * j);
}

// ZeroChunks() zeroes a row of `cols` floats from chunk `first` on: stores,
// not a call to memset per row (which took longer than the weights saved).
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void ZeroChunks(float* row, int64_t cols, int64_t first) {
  for (int64_t j = first; 16 * j < cols; ++j) {
    _mm512_mask_storeu_ps(row + 16 * j, ChunkInRow(cols, j),
                          _mm512_setzero_ps());
  }
}
KINDLING_AVX512_END

// BlockKeys: one bit per key of a block of up to kKeyBlock keys, 64 to a
// word.
struct BlockKeys {
  uint64_t words[kWordsPerBlock];

  bool None() const {
    for (const uint64_t word : words) {
      if (word != 0) return false;
    }
    return true;
  }
  // Lanes() is the bits of keys [16 j, 16 j + 16).
  __mmask16 Lanes(int64_t j) const {
    return static_cast<__mmask16>(words[j / 4] >> (16 * (j % 4)));
  }
  // Bits8() is the bits of keys [8 j, 8 j + 8).
  uint32_t Bits8(int64_t j) const {
    return static_cast<uint32_t>(words[j / 8] >> (8 * (j % 8))) & 0xff;
  }
};

// BlockKeptKeys() is KeptKeys() of each tile of the block of `cols` keys
// from k0.
BlockKeys BlockKeptKeys(const Masks& masks, int64_t batch, int64_t k0,
                        int64_t cols) {
  BlockKeys kept{};
  for (int64_t w = 0; w < kWordsPerBlock && 64 * w < cols; ++w) {
    kept.words[w] = KeptKeys(masks, batch, k0 + 64 * w,
                             std::min<int64_t>(64, cols - 64 * w));
  }
  return kept;
}

// RowBlockKeys() is RowKeptKeys() of each tile of the block.
BlockKeys RowBlockKeys(const Masks& masks, const BlockKeys& block_kept,
                       int64_t query, int64_t k0) {
  BlockKeys kept;
  for (int64_t w = 0; w < kWordsPerBlock; ++w) {
    kept.words[w] = RowKeptKeys(masks, block_kept.words[w], query, k0 + 64 * w);
  }
  return kept;
}

// SoftmaxRows16() is SoftmaxRows() for f32 on sixteen lanes, the masks as
// one bit per key (REQUIRES: HasAvx512()). A masked lane's exponent is
// computed as e^0 and zeroed, which keeps Exp16 on its fast path.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void SoftmaxRows16(const Masks& masks,
                                   const ScoreTile<float>& tile) {
  const BlockKeys block_kept =
      BlockKeptKeys(masks, tile.batch, tile.k0, tile.cols);
  const __m512 scale = _mm512_set1_ps(tile.scale);
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* row = tile.s + r * tile.cols;
    const BlockKeys kept =
        RowBlockKeys(masks, block_kept, tile.q0 + r, tile.k0);
    if (kept.None()) {  // no key of this block: weights 0, m and l unchanged
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    // Past the keys the row sees (causal), its weights are 0 and its scores
    // may be unwritten (attention_products.h).
    const int64_t chunks =
        (masks.SeenKeys(tile.q0 + r, tile.k0, tile.cols) + 15) / 16;
    ZeroChunks(row, tile.cols, chunks);
    __m512 maxima = neg_inf;
    for (int64_t j = 0; j < chunks; ++j) {
      const __mmask16 lanes = kept.Lanes(j);
      const __m512 x = _mm512_mask_mul_ps(
          neg_inf, lanes, _mm512_maskz_loadu_ps(lanes, row + 16 * j), scale);
      maxima = _mm512_max_ps(maxima, x);
    }
    const float m_new = std::max(tile.m[r], _mm512_reduce_max_ps(maxima));
    if (m_new == -INFINITY) {  // every score so far -inf: nothing to add
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    const __m512 shift = _mm512_set1_ps(m_new);
    __m512 sums = _mm512_setzero_ps();
    for (int64_t j = 0; j < chunks; ++j) {
      const __mmask16 lanes = kept.Lanes(j);
      const __m512 x = _mm512_maskz_fmsub_ps(
          lanes, _mm512_maskz_loadu_ps(lanes, row + 16 * j), scale, shift);
      const __m512 weights = _mm512_maskz_mov_ps(lanes, cpu::Exp16(x));
      sums = _mm512_add_ps(sums, weights);
      _mm512_mask_storeu_ps(row + 16 * j, ChunkInRow(tile.cols, j), weights);
    }
    UpdateRow(tile, r, m_new, _mm512_reduce_add_ps(sums));
  }
}
KINDLING_AVX512_END

// StoreChunk8() writes chunk j (floats [8 j, 8 j + 8)) of a row of `cols`,
// only its lanes inside the row: the tiles' rows are dense.
void StoreChunk8(float* row, int64_t cols, int64_t j, __m256 x) {
  if (8 * j + 8 <= cols) {
    _mm256_storeu_ps(row + 8 * j, x);
  } else {
    cpu::StorePartial(row + 8 * j, cols - 8 * j, x);
  }
}

// ZeroChunks8() is ZeroChunks() on eight lanes: it zeroes a row of `cols`
// floats from chunk `first` on.
void ZeroChunks8(float* row, int64_t cols, int64_t first) {
  std::fill(row + std::min(8 * first, cols), row + cols, 0.0f);
}

// MaskedExp8() is e^(x scale - shift) of chunk j of `row` on the lanes of
// `bits`, 0 on the others, which it neither reads nor exponentiates from
// the row (they take e^0).
__m256 MaskedExp8(const float* row, int64_t j, uint32_t bits, __m256 scale,
                  __m256 shift) {
  const __m256i lanes = cpu::LanesOfBits8(bits);
  const __m256 in_lanes = _mm256_castsi256_ps(lanes);
  const __m256 x = _mm256_and_ps(
      in_lanes,
      _mm256_fmsub_ps(_mm256_maskload_ps(row + 8 * j, lanes), scale, shift));
  return _mm256_and_ps(in_lanes, cpu::Exp8(x));
}

// SoftmaxRows8() is SoftmaxRows16() on eight lanes, for f32 where the CPU
// has no AVX-512: the same chunks skipped past a row's last seen key, masks
// as bits, and masked lanes computed as e^0 and zeroed.
void SoftmaxRows8(const Masks& masks, const ScoreTile<float>& tile) {
  const BlockKeys block_kept =
      BlockKeptKeys(masks, tile.batch, tile.k0, tile.cols);
  const __m256 scale = _mm256_set1_ps(tile.scale);
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* row = tile.s + r * tile.cols;
    const BlockKeys kept =
        RowBlockKeys(masks, block_kept, tile.q0 + r, tile.k0);
    if (kept.None()) {  // no key of this block: weights 0, m and l unchanged
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    // Past the keys the row sees (causal), its weights are 0 and its scores
    // may be unwritten (attention_products.h).
    const int64_t chunks =
        (masks.SeenKeys(tile.q0 + r, tile.k0, tile.cols) + 7) / 8;
    ZeroChunks8(row, tile.cols, chunks);
    __m256 maxima = neg_inf;
    for (int64_t j = 0; j < chunks; ++j) {
      const __m256i lanes = cpu::LanesOfBits8(kept.Bits8(j));
      const __m256 x =
          _mm256_mul_ps(_mm256_maskload_ps(row + 8 * j, lanes), scale);
      maxima = _mm256_max_ps(
          maxima, _mm256_blendv_ps(neg_inf, x, _mm256_castsi256_ps(lanes)));
    }
    const float m_new = std::max(tile.m[r], cpu::Max8(maxima));
    if (m_new == -INFINITY) {  // every score so far -inf: nothing to add
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    const __m256 shift = _mm256_set1_ps(m_new);
    __m256 sums = _mm256_setzero_ps();
    for (int64_t j = 0; j < chunks; ++j) {
      const __m256 weights = MaskedExp8(row, j, kept.Bits8(j), scale, shift);
      sums = _mm256_add_ps(sums, weights);
      StoreChunk8(row, tile.cols, j, weights);
    }
    UpdateRow(tile, r, m_new, cpu::Sum8(sums));
  }
}

// ForwardTile() computes the output and log-sum-exp of queries
// [q0, q0 + rows) of head `bh`.
template <class T>
void ForwardTile(const FusedAttentionShape& shape, const Masks& masks,
                 const FusedAttentionTensors& t, int64_t bh, int64_t q0) {
  const int64_t dh = shape.head_dim, dv = shape.value_dim;
  const int64_t rows = std::min(kTile, shape.queries - q0);
  const HeadRows<const T> q = RowsOf<const T>(t.q, shape, bh);
  const HeadRows<const T> k = RowsOf<const T>(t.k, shape, bh);
  const HeadRows<const T> v = RowsOf<const T>(t.v, shape, bh);
  const HeadRows<T> out = RowsOf<T>(t.out, shape, bh);
  T* lse = t.logsumexp.data_as<T>() + bh * shape.queries + q0;
  const int64_t key_end = masks.KeyEnd(q0 + rows);
  std::vector<T> s(rows * std::min(kKeyBlock, key_end)), acc(rows * dv, T{0});
  std::vector<T> m(rows, -std::numeric_limits<T>::infinity()), l(rows, T{0});
  for (int64_t k0 = 0; k0 < key_end; k0 += kKeyBlock) {
    const int64_t cols = std::min(kKeyBlock, key_end - k0);
    // Causal: query q0 + r sees keys k0 + c for c < r + (q0 - k0 + 1).
    const ProductBound seen{masks.causal ? Bound::kColumnsBelow : Bound::kAll,
                            q0 - k0 + 1};
    TileProduct<T>(false, true, rows, cols, dh, q.Row(q0), q.stride, k.Row(k0),
                   k.stride, s.data(), cols, GemmAccumulate::kOverwrite, seen);
    const ScoreTile<T> tile{bh / shape.heads,
                            q0,
                            rows,
                            k0,
                            cols,
                            dv,
                            static_cast<T>(shape.scale),
                            s.data(),
                            m.data(),
                            l.data(),
                            acc.data()};
    if constexpr (std::is_same_v<T, float>) {
      if (cpu::HasAvx512()) {
        SoftmaxRows16(masks, tile);
      } else {
        SoftmaxRows8(masks, tile);
      }
    } else {
      SoftmaxRows(masks, tile);
    }
    TileProduct<T>(
        false, false, rows, dv, cols, s.data(), cols, v.Row(k0), v.stride,
        acc.data(), dv, GemmAccumulate::kAdd,
        {masks.causal ? Bound::kDepthBelow : Bound::kAll, seen.offset});
  }
  for (int64_t r = 0; r < rows; ++r) {
    T* out_row = out.Row(q0 + r);
    for (int64_t d = 0; d < dv; ++d) out_row[d] = acc[r * dv + d] / l[r];
    lse[r] = m[r] + std::log(l[r]);  // -inf for a row with no key
  }
}

template <class T>
void Forward(const FusedAttentionShape& shape, const FusedAttentionTensors& t) {
  const Masks masks = MasksOf(shape, t);
  const int64_t tiles = (shape.queries + kTile - 1) / kTile;
  const int64_t heads = shape.batch * shape.heads;
  cpu::ParallelFor(heads * tiles, 1, [&](int64_t begin, int64_t end) {
    // One deferral for all the tiles' products (onednn_common.h).
    const cpu::SignalsDeferred signals_deferred;
    for (int64_t task = begin; task < end; ++task) {
      ForwardTile<T>(shape, masks, t, task / tiles, (task % tiles) * kTile);
    }
  });
}

// The backward's tile of weights P = e^(s * scale - lse) for queries
// [q0, q0 + rows) against keys [k0, k0 + cols): p holds the scores on entry,
// dense (rows of cols).
template <class T>
struct WeightTile {
  int64_t batch, q0, rows, k0, cols;
  T scale;
  const T* lse;  // of the head's queries
  T* p;
};

// RecomputeWeights() turns the scores into the forward's weights: 0 where
// masked and on rows that saw no key (f64; f32 runs RecomputeWeights8 or
// RecomputeWeights16).
template <class T>
void RecomputeWeights(const Masks& masks, const WeightTile<T>& tile) {
  for (int64_t r = 0; r < tile.rows; ++r) {
    T* row = tile.p + r * tile.cols;
    const T lse = tile.lse[tile.q0 + r];
    if (lse == -INFINITY) {  // a row with no key: no weight
      std::fill(row, row + tile.cols, T{0});
      continue;
    }
    ExpRow<T>(row, tile.cols, tile.scale, lse);
    for (int64_t c = 0; c < tile.cols; ++c) {
      if (masks.Skips(tile.batch, tile.q0 + r, tile.k0 + c)) row[c] = 0;
    }
  }
}

// RecomputeWeights16() is RecomputeWeights() for f32 on sixteen lanes
// (REQUIRES: HasAvx512()).
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void RecomputeWeights16(const Masks& masks,
                                        const WeightTile<float>& tile) {
  const uint64_t tile_kept = KeptKeys(masks, tile.batch, tile.k0, tile.cols);
  const __m512 scale = _mm512_set1_ps(tile.scale);
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* row = tile.p + r * tile.cols;
    const float lse = tile.lse[tile.q0 + r];
    const uint64_t kept = RowKeptKeys(masks, tile_kept, tile.q0 + r, tile.k0);
    if (lse == -INFINITY || kept == 0) {
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    // As in SoftmaxRows16: past the keys the row sees, zeros.
    const int64_t chunks =
        (masks.SeenKeys(tile.q0 + r, tile.k0, tile.cols) + 15) / 16;
    ZeroChunks(row, tile.cols, chunks);
    const __m512 shift = _mm512_set1_ps(lse);
    for (int64_t j = 0; j < chunks; ++j) {
      const __mmask16 lanes = static_cast<__mmask16>(kept >> (16 * j));
      const __m512 x = _mm512_maskz_fmsub_ps(
          lanes, _mm512_maskz_loadu_ps(lanes, row + 16 * j), scale, shift);
      _mm512_mask_storeu_ps(row + 16 * j, ChunkInRow(tile.cols, j),
                            _mm512_maskz_mov_ps(lanes, cpu::Exp16(x)));
    }
  }
}
KINDLING_AVX512_END

// RecomputeWeights8() is RecomputeWeights16() on eight lanes, for f32 where
// the CPU has no AVX-512.
void RecomputeWeights8(const Masks& masks, const WeightTile<float>& tile) {
  const uint64_t tile_kept = KeptKeys(masks, tile.batch, tile.k0, tile.cols);
  const __m256 scale = _mm256_set1_ps(tile.scale);
  for (int64_t r = 0; r < tile.rows; ++r) {
    float* row = tile.p + r * tile.cols;
    const float lse = tile.lse[tile.q0 + r];
    const uint64_t kept = RowKeptKeys(masks, tile_kept, tile.q0 + r, tile.k0);
    if (lse == -INFINITY || kept == 0) {
      std::fill(row, row + tile.cols, 0.0f);
      continue;
    }
    // As in SoftmaxRows8: past the keys the row sees, zeros.
    const int64_t chunks =
        (masks.SeenKeys(tile.q0 + r, tile.k0, tile.cols) + 7) / 8;
    ZeroChunks8(row, tile.cols, chunks);
    const __m256 shift = _mm256_set1_ps(lse);
    for (int64_t j = 0; j < chunks; ++j) {
      const uint32_t bits = (kept >> (8 * j)) & 0xff;
      StoreChunk8(row, tile.cols, j, MaskedExp8(row, j, bits, scale, shift));
    }
  }
}

// ScoreGradientRow() turns a row of dP into dS = P (dP - delta) scale for
// its first `seen` keys and zeroes the rest of its `cols`.
template <class T>
void ScoreGradientRow(const T* p, T delta, T scale, int64_t seen, int64_t cols,
                      T* dp) {
  for (int64_t c = 0; c < seen; ++c) dp[c] = p[c] * (dp[c] - delta) * scale;
  std::fill(dp + seen, dp + cols, T{0});
}

// BackwardHead() computes dq, dk and dv of head `bh`.
template <class T>
void BackwardHead(const FusedAttentionShape& shape, const Masks& masks,
                  const FusedAttentionTensors& t, int64_t bh) {
  const int64_t dh = shape.head_dim, dv = shape.value_dim;
  const int64_t queries = shape.queries, keys = shape.keys;
  const int64_t batch = bh / shape.heads;
  const HeadRows<const T> q = RowsOf<const T>(t.q, shape, bh);
  const HeadRows<const T> k = RowsOf<const T>(t.k, shape, bh);
  const HeadRows<const T> v = RowsOf<const T>(t.v, shape, bh);
  const HeadRows<const T> out = RowsOf<const T>(t.out, shape, bh);
  const HeadRows<const T> grad_out = RowsOf<const T>(t.grad_out, shape, bh);
  const T* lse = t.logsumexp.data_as<const T>() + bh * queries;
  const HeadRows<T> dq = RowsOf<T>(t.grad_q, shape, bh);
  const HeadRows<T> dk = RowsOf<T>(t.grad_k, shape, bh);
  const HeadRows<T> dvv = RowsOf<T>(t.grad_v, shape, bh);
  // Each gradient's first product overwrites it rather than adding to a
  // zero fill (the fills took 3% of the char-LM's attention): dq's at the
  // first key tile, which every query sees, dk's and dv's at a tile's first
  // block of queries. Only what no product reaches is zeroed.
  if (keys == 0) FillRows(dq, 0, queries, dh);
  const T scale = static_cast<T>(shape.scale);
  // delta[i] = dO_i . O_i, the softmax backward's row term.
  std::vector<T> delta(queries);
  for (int64_t i = 0; i < queries; ++i) {
    T sum = 0;
    const T* grad_out_row = grad_out.Row(i);
    const T* out_row = out.Row(i);
    for (int64_t d = 0; d < dv; ++d) sum += grad_out_row[d] * out_row[d];
    delta[i] = sum;
  }
  const int64_t block = std::min(kQueryBlock, queries) * std::min(kTile, keys);
  std::vector<T> p(block), dp(block);
  for (int64_t k0 = 0; k0 < keys; k0 += kTile) {
    const int64_t cols = std::min(kTile, keys - k0);
    // Causal: queries before k0 see none of these keys.
    const int64_t first_query = shape.causal ? k0 : 0;
    if (first_query >= queries) {
      FillRows(dk, k0, k0 + cols, dh);
      FillRows(dvv, k0, k0 + cols, dv);
    }
    for (int64_t q0 = first_query; q0 < queries; q0 += kQueryBlock) {
      const GemmAccumulate into_dq =
          k0 == 0 ? GemmAccumulate::kOverwrite : GemmAccumulate::kAdd;
      const GemmAccumulate into_dk_dv =
          q0 == first_query ? GemmAccumulate::kOverwrite : GemmAccumulate::kAdd;
      const int64_t rows = std::min(kQueryBlock, queries - q0);
      // Causal: query q0 + r sees keys k0 + c for c < r + (q0 - k0 + 1), and
      // key k0 + c is seen by queries q0 + r for r >= c + (k0 - q0).
      const Bound below = masks.causal ? Bound::kColumnsBelow : Bound::kAll;
      const Bound depth_below = masks.causal ? Bound::kDepthBelow : Bound::kAll;
      const ProductBound seen{below, q0 - k0 + 1};
      const ProductBound seen_by{masks.causal ? Bound::kDepthFrom : Bound::kAll,
                                 k0 - q0};
      TileProduct<T>(false, true, rows, cols, dh, q.Row(q0), q.stride,
                     k.Row(k0), k.stride, p.data(), cols,
                     GemmAccumulate::kOverwrite, seen);
      const WeightTile<T> weights{batch, q0,    rows, k0,
                                  cols,  scale, lse,  p.data()};
      if constexpr (std::is_same_v<T, float>) {
        if (cpu::HasAvx512()) {
          RecomputeWeights16(masks, weights);
        } else {
          RecomputeWeights8(masks, weights);
        }
      } else {
        RecomputeWeights(masks, weights);
      }
      // dv_j += P^T dO_i
      TileProduct<T>(true, false, cols, dv, rows, p.data(), cols,
                     grad_out.Row(q0), grad_out.stride, dvv.Row(k0), dvv.stride,
                     into_dk_dv, seen_by);
      // dP = dO_i v_j^T, then dS = P (dP - delta) scale, kept in dp.
      TileProduct<T>(false, true, rows, cols, dv, grad_out.Row(q0),
                     grad_out.stride, v.Row(k0), v.stride, dp.data(), cols,
                     GemmAccumulate::kOverwrite, seen);
      for (int64_t r = 0; r < rows; ++r) {
        // dP is unwritten past the keys the row sees, where dS is 0.
        ScoreGradientRow<T>(p.data() + r * cols, delta[q0 + r], scale,
                            masks.SeenKeys(q0 + r, k0, cols), cols,
                            dp.data() + r * cols);
      }
      // dq_i += dS k_j; dk_j += dS^T q_i.
      TileProduct<T>(false, false, rows, dh, cols, dp.data(), cols, k.Row(k0),
                     k.stride, dq.Row(q0), dq.stride, into_dq,
                     {depth_below, seen.offset});
      TileProduct<T>(true, false, cols, dh, rows, dp.data(), cols, q.Row(q0),
                     q.stride, dk.Row(k0), dk.stride, into_dk_dv, seen_by);
    }
  }
}

template <class T>
void Backward(const FusedAttentionShape& shape,
              const FusedAttentionTensors& t) {
  const Masks masks = MasksOf(shape, t);
  cpu::ParallelFor(shape.batch * shape.heads, 1,
                   [&](int64_t begin, int64_t end) {
                     const cpu::SignalsDeferred signals_deferred;
                     for (int64_t bh = begin; bh < end; ++bh) {
                       BackwardHead<T>(shape, masks, t, bh);
                     }
                   });
}

bool ForwardCpu(const FusedAttentionShape& shape,
                const FusedAttentionTensors& t) {
  if ((DTypeBit(t.q.dtype()) & kF32F64) == 0) return false;
  DispatchDType<kF32F64>(t.q.dtype(), "cpu fused_attention",
                         [&]<class T>() { Forward<T>(shape, t); });
  return true;
}

bool BackwardCpu(const FusedAttentionShape& shape,
                 const FusedAttentionTensors& t) {
  if ((DTypeBit(t.q.dtype()) & kF32F64) == 0) return false;
  DispatchDType<kF32F64>(t.q.dtype(), "cpu fused_attention backward",
                         [&]<class T>() { Backward<T>(shape, t); });
  return true;
}

const FusedAttentionRegistration kRegistered(DeviceKind::kCpu, &ForwardCpu,
                                             &BackwardCpu);

}  // namespace
}  // namespace kindling::nn
