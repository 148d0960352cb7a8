// Reductions and softmax on the CPU.
//
// The input is made contiguous and viewed as [outer, n, inner], reducing n:
//   * inner == 1 (the last axis, or a whole tensor): each output is a pass
//     over n contiguous elements; floats use AVX2 with several vector
//     accumulators (vector_math.h). A single long row (a whole-tensor
//     reduction) is split across threads and the chunks' results combined.
//   * inner > 1: floats are cut into blocks of adjacent columns that walk
//     the n rows with the columns in vector registers, the blocks spread
//     over threads (so [n, inner] along axis 0 is parallel too); other
//     dtypes accumulate rows into the output row.
// Float sums accumulate in double: a 16M-element f32 sum stays exact to f32
// precision, and the widening is free next to memory bandwidth. Softmax
// follows the same two layouts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// Accumulator type of a sum: double for floats, wrapping 64-bit for ints.
template <class T>
using SumType =
    std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

constexpr int kLanes = 16;

// SumRow() is the sum of x[0..n) in SumType<T>.
template <class T>
SumType<T> SumRow(const T* x, int64_t n);

// Floats are summed in blocks of 128: four vector accumulators add four
// elements per lane, and each block's 32 lanes go into four double lanes.
// This keeps double's accuracy over millions of elements at float's speed.
template <>
double SumRow<float>(const float* x, int64_t n) {
  __m256d total = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 128 <= n; i += 128) {
    __m256 lanes[4];
    for (int k = 0; k < 4; ++k) lanes[k] = _mm256_loadu_ps(x + i + 8 * k);
    for (int step = 32; step < 128; step += 32) {
      for (int k = 0; k < 4; ++k) {
        lanes[k] =
            _mm256_add_ps(lanes[k], _mm256_loadu_ps(x + i + step + 8 * k));
      }
    }
    total = AddWidened(total, _mm256_add_ps(_mm256_add_ps(lanes[0], lanes[1]),
                                            _mm256_add_ps(lanes[2], lanes[3])));
  }
  for (; i < n; i += 8) {
    total = AddWidened(total,
                       LoadPartial(x + i, std::min<int64_t>(8, n - i), 0.0f));
  }
  return Sum4d(total);
}

template <class T>
SumType<T> SumRow(const T* x, int64_t n) {
  using Acc = SumType<T>;
  Acc lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += static_cast<Acc>(x[i + j]);
  }
  Acc total = 0;
  for (; i < n; ++i) total += static_cast<Acc>(x[i]);
  for (int j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

// ExtremeRow() is the max (kMax) or min of x[0..n), n >= 1; NaN if any
// element is NaN. Scalar: floats take the AVX2 specialization below.
template <class T, bool kMax>
T ExtremeRow(const T* x, int64_t n) {
  T best = x[0];
  bool nan_seen = false;
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    best = kMax ? (v > best ? v : best) : (v < best ? v : best);
    nan_seen |= v != v;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan_seen) return std::numeric_limits<T>::quiet_NaN();
  }
  return best;
}

// Max/min of eight lanes; MaxOrMin<true>(a, b) is max(a, b).
template <bool kMax>
__m256 MaxOrMin(__m256 a, __m256 b) {
  return kMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
}

// ExtremeRowF32() is ExtremeRow for floats with four vector accumulators
// (vmaxps keeps one of its operands on NaN, so NaNs are tracked apart in an
// unordered-compare mask). One unordered compare tests two vectors for NaN
// at once, so a step of 32 floats is 4 max + 2 compare + 2 or rather than
// 4 + 4 + 4. The loop still waits on its loads (perf puts 80% of its samples
// there), so it prefetches 2 KiB ahead -- into the next row, past the end of
// a page the hardware prefetcher does not cross; a prefetch past the end of
// the buffer never faults. In tensor_bench that took max along the last axis
// of [4096, 1024] from 0.99-1.08x PyTorch's speed to 1.24x.
template <bool kMax>
float ExtremeRowF32(const float* x, int64_t n) {
  const __m256 first = _mm256_set1_ps(x[0]);
  __m256 best[4] = {first, first, first, first};
  __m256 nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 v[4];
    _mm_prefetch(reinterpret_cast<const char*>(x + i + 512), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(x + i + 528), _MM_HINT_T0);
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + i + 8 * k);
      best[k] = MaxOrMin<kMax>(best[k], v[k]);
    }
    nan = _mm256_or_ps(nan,
                       _mm256_or_ps(_mm256_cmp_ps(v[0], v[1], _CMP_UNORD_Q),
                                    _mm256_cmp_ps(v[2], v[3], _CMP_UNORD_Q)));
  }
  for (; i < n; i += 8) {
    const __m256 v = LoadPartial(x + i, std::min<int64_t>(8, n - i), x[0]);
    best[0] = MaxOrMin<kMax>(best[0], v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(nan) != 0) {
    return std::numeric_limits<float>::quiet_NaN();
  }
  const __m256 all = MaxOrMin<kMax>(MaxOrMin<kMax>(best[0], best[1]),
                                    MaxOrMin<kMax>(best[2], best[3]));
  return kMax ? Max8(all) : Min8(all);
}

template <>
float ExtremeRow<float, true>(const float* x, int64_t n) {
  return ExtremeRowF32<true>(x, n);
}
template <>
float ExtremeRow<float, false>(const float* x, int64_t n) {
  return ExtremeRowF32<false>(x, n);
}

// ArgExtreme() is the index of the first max (kMax) or min among x[k *
// stride], k < n; the first NaN wins.
template <class T, bool kMax>
int64_t ArgExtreme(const T* x, int64_t n, int64_t stride) {
  int64_t best_index = 0;
  T best = x[0];
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(best)) return 0;
  }
  for (int64_t k = 1; k < n; ++k) {
    const T v = x[k * stride];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return k;
    }
    if (kMax ? v > best : v < best) {
      best = v;
      best_index = k;
    }
  }
  return best_index;
}

// Better<kMax>() is the lane mask of `candidate` strictly beyond `best`.
template <bool kMax>
__m256 Better(__m256 candidate, __m256 best) {
  return _mm256_cmp_ps(candidate, best, kMax ? _CMP_GT_OQ : _CMP_LT_OQ);
}

// ValueAndIndex is a running arg-extreme: the value and its first index.
struct ValueAndIndex {
  float value;
  int64_t index;
};

// ArgExtremeRowF32() is ArgExtreme over contiguous x[0..n), n < 2^31: each
// lane keeps its best value and the first index it was seen at (a strict
// compare never moves to a later tie), and the lanes are merged by value,
// then lowest index. Rows with a NaN go to the scalar loop (first NaN wins).
template <bool kMax>
int64_t ArgExtremeRowF32(const float* x, int64_t n) {
  const float fill = x[0];
  __m256 best[2] = {_mm256_set1_ps(fill), _mm256_set1_ps(fill)};
  __m256i index[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  __m256 nan = _mm256_setzero_ps();
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 2; ++k) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      const __m256 better = Better<kMax>(v, best[k]);
      best[k] = _mm256_blendv_ps(best[k], v, better);
      const __m256i at = _mm256_add_epi32(
          _mm256_set1_epi32(static_cast<int32_t>(i + 8 * k)), lanes);
      index[k] = _mm256_castps_si256(_mm256_blendv_ps(
          _mm256_castsi256_ps(index[k]), _mm256_castsi256_ps(at), better));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  ValueAndIndex result{fill, 0};
  alignas(32) float values[8];
  alignas(32) int32_t indices[8];
  for (int k = 0; k < 2; ++k) {
    _mm256_store_ps(values, best[k]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices), index[k]);
    for (int lane = 0; lane < 8; ++lane) {
      const bool wins =
          kMax ? values[lane] > result.value : values[lane] < result.value;
      if (wins ||
          (values[lane] == result.value && indices[lane] < result.index)) {
        result = {values[lane], indices[lane]};
      }
    }
  }
  for (; i < n; ++i) {
    if (x[i] != x[i]) return ArgExtreme<float, kMax>(x, n, 1);
    if (kMax ? x[i] > result.value : x[i] < result.value) result = {x[i], i};
  }
  if (_mm256_movemask_ps(nan) != 0) return ArgExtreme<float, kMax>(x, n, 1);
  return result.index;
}

// ArgExtremeRow() is ArgExtreme over contiguous x[0..n).
template <class T, bool kMax>
int64_t ArgExtremeRow(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n < (int64_t{1} << 31)) return ArgExtremeRowF32<kMax>(x, n);
  }
  return ArgExtreme<T, kMax>(x, n, 1);
}

struct Extent {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

Extent ExtentOf(const Shape& shape, int axis) {
  Extent extent;
  for (int i = 0; i < axis; ++i) extent.outer *= shape[i];
  extent.n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) extent.inner *= shape[i];
  return extent;
}

template <class T>
T FinishSum(SumType<T> sum, ReduceOp op, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(op == ReduceOp::kMean ? sum / static_cast<double>(n)
                                                : sum);
  } else {
    const int64_t signed_sum = static_cast<int64_t>(sum);
    return static_cast<T>(op == ReduceOp::kMean ? signed_sum / n : signed_sum);
  }
}

// Reduces one long row (outer == 1, inner == 1) by chunks across threads,
// combining the chunks' results in order.
template <class T>
void ReduceLongRow(ReduceOp op, T* out, int64_t* arg_out, const T* in,
                   int64_t n) {
  const int64_t chunks =
      std::min<int64_t>(MaxThreads() * kChunksPerThread, n / kElementGrain);
  auto first_of = [&](int64_t chunk) { return n * chunk / chunks; };
  if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
    std::vector<SumType<T>> partial(chunks, SumType<T>{0});
    ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        partial[chunk] =
            SumRow(in + first_of(chunk), first_of(chunk + 1) - first_of(chunk));
      }
    });
    SumType<T> total = 0;
    for (const SumType<T>& value : partial) total += value;
    out[0] = FinishSum<T>(total, op, n);
    return;
  }
  // The others: each chunk's arg-extreme index, then the first NaN or the
  // first strictly better value wins (max and min read their value there).
  const bool is_max = op == ReduceOp::kMax || op == ReduceOp::kArgMax;
  std::vector<int64_t> partial(chunks, 0);
  ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const T* x = in + first_of(chunk);
      const int64_t length = first_of(chunk + 1) - first_of(chunk);
      partial[chunk] =
          first_of(chunk) + (is_max ? ArgExtremeRow<T, true>(x, length)
                                    : ArgExtremeRow<T, false>(x, length));
    }
  });
  int64_t best = partial[0];
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const T candidate = in[partial[chunk]];
    const T current = in[best];
    if (current != current) break;  // a NaN: the first one wins
    if (candidate != candidate ||
        (is_max ? candidate > current : candidate < current)) {
      best = partial[chunk];
    }
  }
  if (op == ReduceOp::kArgMax || op == ReduceOp::kArgMin) {
    arg_out[0] = best;
  } else {
    out[0] = in[best];
  }
}

// Reduces [outer, n] rows (inner == 1).
template <class T>
void ReduceRows(ReduceOp op, T* out, int64_t* arg_out, const T* in,
                const Extent& e) {
  if (e.outer == 1 && e.n >= 2 * kElementGrain) {
    ReduceLongRow(op, out, arg_out, in, e.n);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kElementGrain / e.n);
  ParallelFor(e.outer, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* row = in + o * e.n;
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          out[o] = FinishSum<T>(SumRow(row, e.n), op, e.n);
          break;
        case ReduceOp::kMax:
          out[o] = ExtremeRow<T, true>(row, e.n);
          break;
        case ReduceOp::kMin:
          out[o] = ExtremeRow<T, false>(row, e.n);
          break;
        case ReduceOp::kArgMax:
          arg_out[o] = ArgExtremeRow<T, true>(row, e.n);
          break;
        case ReduceOp::kArgMin:
          arg_out[o] = ArgExtremeRow<T, false>(row, e.n);
          break;
      }
    }
  });
}

// --- Columns of floats (inner > 1) -----------------------------------------
//
// A float [outer, n, inner] reduction is cut into tasks of one slab `o` and
// up to kColumnBlock adjacent columns; a task walks the n rows of its
// columns with the columns in vector registers. Tasks are spread over the
// threads, so a single slab ([n, inner] along axis 0) runs in parallel too.

constexpr int64_t kColumnBlock = 32;  // four vectors of floats
constexpr int kColumnVectors = kColumnBlock / 8;

// ColumnMasks holds the load/store mask of each vector of a block `width`
// columns wide; Load()/Store() skip the masks for a full block.
struct ColumnMasks {
  explicit ColumnMasks(int64_t width) {
    for (int k = 0; k < kColumnVectors; ++k) {
      mask[k] = TailMask(std::clamp<int64_t>(width - 8 * k, 0, 8));
    }
  }
  template <bool kFull>
  __m256 Load(const float* x, int k) const {
    return kFull ? _mm256_loadu_ps(x + 8 * k)
                 : _mm256_maskload_ps(x + 8 * k, mask[k]);
  }
  template <bool kFull>
  void Store(float* y, int k, __m256 value) const {
    if (kFull) {
      _mm256_storeu_ps(y + 8 * k, value);
    } else {
      _mm256_maskstore_ps(y + 8 * k, mask[k], value);
    }
  }
  __m256i mask[kColumnVectors];
};

// ColumnBlock: a task's view, x[r * stride + i] for rows r < n and columns
// i < width, its output at out (one value per column).
struct ColumnBlock {
  const float* x;
  int64_t n;
  int64_t stride;
  int64_t width;
};

// SumColumns(): sums of the block's columns (divided by n for a mean). Rows
// are added in float 64 at a time, then widened into double.
template <bool kFull>
void SumColumns(float* out, const ColumnBlock& b, bool mean) {
  const ColumnMasks masks(b.width);
  __m256d total[2 * kColumnVectors];
  for (__m256d& lanes : total) lanes = _mm256_setzero_pd();
  for (int64_t first = 0; first < b.n; first += 64) {
    const int64_t last = std::min(b.n, first + 64);
    __m256 sum[kColumnVectors];
    for (__m256& lanes : sum) lanes = _mm256_setzero_ps();
    for (int64_t r = first; r < last; ++r) {
      for (int k = 0; k < kColumnVectors; ++k) {
        sum[k] =
            _mm256_add_ps(sum[k], masks.Load<kFull>(b.x + r * b.stride, k));
      }
    }
    for (int k = 0; k < kColumnVectors; ++k) {
      total[2 * k] = _mm256_add_pd(
          total[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(sum[k])));
      total[2 * k + 1] = _mm256_add_pd(
          total[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(sum[k], 1)));
    }
  }
  const __m256d scale = _mm256_set1_pd(mean ? 1.0 / b.n : 1.0);
  for (int k = 0; k < kColumnVectors; ++k) {
    const __m128 low = _mm256_cvtpd_ps(_mm256_mul_pd(total[2 * k], scale));
    const __m128 high = _mm256_cvtpd_ps(_mm256_mul_pd(total[2 * k + 1], scale));
    masks.Store<kFull>(out, k, _mm256_set_m128(high, low));
  }
}

// ExtremeColumns(): max (kMax) or min of each column; NaN if any is NaN.
template <bool kMax, bool kFull>
void ExtremeColumns(float* out, const ColumnBlock& b) {
  const ColumnMasks masks(b.width);
  __m256 best[kColumnVectors];
  __m256 nan = _mm256_setzero_ps();
  for (int k = 0; k < kColumnVectors; ++k) {
    best[k] = masks.Load<kFull>(b.x, k);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(best[k], best[k], _CMP_UNORD_Q));
  }
  for (int64_t r = 1; r < b.n; ++r) {
    for (int k = 0; k < kColumnVectors; ++k) {
      const __m256 v = masks.Load<kFull>(b.x + r * b.stride, k);
      best[k] = MaxOrMin<kMax>(best[k], v);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  for (int k = 0; k < kColumnVectors; ++k) masks.Store<kFull>(out, k, best[k]);
  if (_mm256_movemask_ps(nan) == 0) return;
  // Some column has a NaN: redo the block's columns one by one.
  for (int64_t i = 0; i < b.width; ++i) {
    for (int64_t r = 0; r < b.n; ++r) {
      if (std::isnan(b.x[r * b.stride + i])) {
        out[i] = b.x[r * b.stride + i];
        break;
      }
    }
  }
}

// ArgExtremeColumns(): the first row index of each column's max (kMax) or
// min; the first NaN wins. Needs n < 2^31 (indices in int32 lanes).
template <bool kMax, bool kFull>
void ArgExtremeColumns(int64_t* out, const ColumnBlock& b) {
  const ColumnMasks masks(b.width);
  __m256 best[kColumnVectors];
  __m256i index[kColumnVectors];
  __m256 nan = _mm256_setzero_ps();
  for (int k = 0; k < kColumnVectors; ++k) {
    best[k] = masks.Load<kFull>(b.x, k);
    index[k] = _mm256_setzero_si256();
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(best[k], best[k], _CMP_UNORD_Q));
  }
  for (int64_t r = 1; r < b.n; ++r) {
    const __m256 row =
        _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int32_t>(r)));
    for (int k = 0; k < kColumnVectors; ++k) {
      const __m256 v = masks.Load<kFull>(b.x + r * b.stride, k);
      const __m256 better = Better<kMax>(v, best[k]);
      best[k] = _mm256_blendv_ps(best[k], v, better);
      index[k] = _mm256_castps_si256(
          _mm256_blendv_ps(_mm256_castsi256_ps(index[k]), row, better));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  alignas(32) int32_t indices[kColumnBlock];
  for (int k = 0; k < kColumnVectors; ++k) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(indices + 8 * k), index[k]);
  }
  for (int64_t i = 0; i < b.width; ++i) out[i] = indices[i];
  if (_mm256_movemask_ps(nan) == 0) return;
  for (int64_t i = 0; i < b.width; ++i) {
    out[i] = ArgExtreme<float, kMax>(b.x + i, b.n, b.stride);
  }
}

// ForEachColumnBlock() calls body(block, out_offset) for every task of up
// to block_width columns of `in`, in parallel, at least `grain` tasks to a
// thread; out_offset is the task's first column in the [outer, inner]
// output.
template <class Body>
void ForEachColumnBlock(const Extent& e, int64_t block_width, int64_t grain,
                        const float* in, const Body& body) {
  const int64_t blocks = (e.inner + block_width - 1) / block_width;
  ParallelFor(e.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks;
      const int64_t column = task % blocks * block_width;
      const ColumnBlock block{in + o * e.n * e.inner + column, e.n, e.inner,
                              std::min(block_width, e.inner - column)};
      body(block, o * e.inner + column);
    }
  });
}

// WithFullness() calls f(std::true_type) for a full block, else
// f(std::false_type), so kernels get fullness as a template argument.
template <class F>
void WithFullness(const ColumnBlock& block, int64_t block_width, const F& f) {
  if (block.width == block_width) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

void ReduceColumnsF32(ReduceOp op, float* out, int64_t* arg_out,
                      const float* in, const Extent& e) {
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / (e.n * kColumnBlock));
  ForEachColumnBlock(
      e, kColumnBlock, grain, in, [&](const ColumnBlock& block, int64_t at) {
        WithFullness(block, kColumnBlock, [&](auto full) {
          constexpr bool kFull = decltype(full)::value;
          switch (op) {
            case ReduceOp::kSum:
            case ReduceOp::kMean:
              return SumColumns<kFull>(out + at, block, op == ReduceOp::kMean);
            case ReduceOp::kMax:
              return ExtremeColumns<true, kFull>(out + at, block);
            case ReduceOp::kMin:
              return ExtremeColumns<false, kFull>(out + at, block);
            case ReduceOp::kArgMax:
              return ArgExtremeColumns<true, kFull>(arg_out + at, block);
            case ReduceOp::kArgMin:
              return ArgExtremeColumns<false, kFull>(arg_out + at, block);
          }
        });
      });
}

// Reduces [outer, n, inner] along n with inner > 1 (other dtypes, and
// floats with n >= 2^31).
template <class T>
void ReduceColumns(ReduceOp op, T* out, int64_t* arg_out, const T* in,
                   const Extent& e) {
  if constexpr (std::is_same_v<T, float>) {
    if (e.n < (int64_t{1} << 31)) {
      ReduceColumnsF32(op, out, arg_out, in, e);
      return;
    }
  }
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (e.n * e.inner));
  ParallelFor(e.outer, grain, [&](int64_t begin, int64_t end) {
    // Sums accumulate in blocks of the output row, on the stack.
    constexpr int64_t kBlock = 256;
    SumType<T> acc[kBlock];
    for (int64_t o = begin; o < end; ++o) {
      const T* slab = in + o * e.n * e.inner;
      T* out_row = out == nullptr ? nullptr : out + o * e.inner;
      if (op == ReduceOp::kArgMax || op == ReduceOp::kArgMin) {
        for (int64_t i = 0; i < e.inner; ++i) {
          arg_out[o * e.inner + i] =
              op == ReduceOp::kArgMax
                  ? ArgExtreme<T, true>(slab + i, e.n, e.inner)
                  : ArgExtreme<T, false>(slab + i, e.n, e.inner);
        }
        continue;
      }
      if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
        for (int64_t i = 0; i < e.inner; ++i) out_row[i] = slab[i];
        bool any_nan = false;
        for (int64_t r = 1; r < e.n; ++r) {
          const T* row = slab + r * e.inner;
          if (op == ReduceOp::kMax) {
            for (int64_t i = 0; i < e.inner; ++i) {
              out_row[i] = row[i] > out_row[i] ? row[i] : out_row[i];
            }
          } else {
            for (int64_t i = 0; i < e.inner; ++i) {
              out_row[i] = row[i] < out_row[i] ? row[i] : out_row[i];
            }
          }
        }
        if constexpr (std::is_floating_point_v<T>) {
          for (int64_t r = 0; r < e.n && !any_nan; ++r) {
            for (int64_t i = 0; i < e.inner; ++i) {
              any_nan |= std::isnan(slab[r * e.inner + i]);
            }
          }
          if (any_nan) {
            for (int64_t i = 0; i < e.inner; ++i) {
              for (int64_t r = 0; r < e.n; ++r) {
                if (std::isnan(slab[r * e.inner + i])) {
                  out_row[i] = slab[r * e.inner + i];
                  break;
                }
              }
            }
          }
        }
        continue;
      }
      for (int64_t block = 0; block < e.inner; block += kBlock) {
        const int64_t width = std::min(kBlock, e.inner - block);
        for (int64_t i = 0; i < width; ++i) acc[i] = 0;
        for (int64_t r = 0; r < e.n; ++r) {
          const T* row = slab + r * e.inner + block;
          for (int64_t i = 0; i < width; ++i) {
            acc[i] += static_cast<SumType<T>>(row[i]);
          }
        }
        for (int64_t i = 0; i < width; ++i) {
          out_row[block + i] = FinishSum<T>(acc[i], op, e.n);
        }
      }
    }
  });
}

}  // namespace

void ReduceKernel(ReduceOp op, const TensorBase& out, const TensorBase& in,
                  int axis) {
  const TensorBase input = in.Contiguous();
  const Extent extent = ExtentOf(input.shape(), axis);
  const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
  DispatchArithmetic(input.dtype(), "reduce", [&]<class T>() {
    T* values = arg ? nullptr : out.data_as<T>();
    int64_t* indices = arg ? out.data_as<int64_t>() : nullptr;
    if (extent.inner == 1) {
      ReduceRows<T>(op, values, indices, input.data_as<const T>(), extent);
    } else {
      ReduceColumns<T>(op, values, indices, input.data_as<const T>(), extent);
    }
  });
}

namespace {

// Softmax of x[k * stride], k < n, into y (same stride); max-subtracted so
// exp never overflows, sums in double. The scalar path, for doubles.
template <class T>
void SoftmaxLine(T* y, const T* x, int64_t n, int64_t stride, bool log) {
  T max_value = x[0];
  for (int64_t k = 1; k < n; ++k) {
    const T v = x[k * stride];
    max_value = v > max_value ? v : max_value;
  }
  if (std::isinf(max_value) && max_value < 0) max_value = 0;  // all -inf
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const T e = std::exp(x[k * stride] - max_value);
    y[k * stride] = e;
    sum += e;
  }
  if (log) {
    // (x - max) is exact enough in T; subtracting log(sum) in double rounds
    // once, where folding max + log(sum) into one T would lose its low bits.
    const double log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) {
      y[k * stride] = static_cast<T>(
          static_cast<double>(x[k * stride] - max_value) - log_sum);
    }
    return;
  }
  const T scale = static_cast<T>(1.0 / sum);
  for (int64_t k = 0; k < n; ++k) y[k * stride] *= scale;
}

// --- Float softmax ---------------------------------------------------------

// Softmax work below this many elements stays on one thread.
constexpr int64_t kSoftmaxGrain = int64_t{1} << 13;

// Rows up to this long compute e^(x - max) into a stack buffer when the
// output streams, so y is written once, with non-temporal stores.
constexpr int64_t kSoftmaxBuffer = 4096;

// Outputs this large stream (as in elementwise.cc).
constexpr int64_t kSoftmaxStreamingBytes = int64_t{4} << 20;

// LogSum is log(sum) split into floats, high + low, so that
// (x - max - high) - low rounds about once, like SoftmaxLine's double
// subtraction, at two float operations a vector.
struct LogSum {
  explicit LogSum(double log_sum)
      : high(static_cast<float>(log_sum)),
        low(static_cast<float>(log_sum - static_cast<double>(high))) {}
  float high;
  float low;
};

// LogSubtract() is (x - max - high) - low per lane.
inline __m256 LogSubtract(__m256 x, __m256 max, __m256 high, __m256 low) {
  return _mm256_sub_ps(_mm256_sub_ps(_mm256_sub_ps(x, max), high), low);
}

// SoftmaxExps16() is SoftmaxRowF32's exponential pass over the first
// n / 16 * 16 elements on sixteen lanes (REQUIRES: HasAvx512()): the same
// e^(x - max) values (Exp16 gives Exp8's bits), written to `exps` unless
// `log`, and added to *sum eight at a time in the eight-lane loop's order,
// so the row's result does not depend on the path. Returns how many
// elements it did.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 int64_t SoftmaxExps16(float* exps, const float* x, int64_t n,
                                      float max_value, bool log, __m256d* sum) {
  const __m512 max = _mm512_set1_ps(max_value);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), max));
    *sum = AddWidened(*sum, _mm512_castps512_ps256(e));
    *sum = AddWidened(
        *sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    if (!log) _mm512_storeu_ps(exps + i, e);
  }
  return i;
}
KINDLING_AVX512_END

// SoftmaxRowF32(): softmax (or log_softmax) of contiguous x[0..n) into y,
// in three passes: max; e^(x - max) and its sum (into y, or `buffer` when
// streaming a row that fits); scale (or subtract the log-sum). Returns with
// streaming stores possibly pending (the caller fences).
void SoftmaxRowF32(float* y, const float* x, int64_t n, bool log, bool stream,
                   float* buffer) {
  float max_value = ExtremeRow<float, true>(x, n);
  if (std::isinf(max_value) && max_value < 0) max_value = 0;  // all -inf
  const __m256 max = _mm256_set1_ps(max_value);
  auto load = [&](const float* row, int64_t i, int64_t lanes) {
    return lanes == 8 ? _mm256_loadu_ps(row + i)
                      : LoadPartial(row + i, lanes, -__builtin_inff());
  };
  float* exps = stream && n <= kSoftmaxBuffer ? buffer : y;
  __m256d sum = _mm256_setzero_pd();
  // The exponentials are the arithmetic-bound part: sixteen lanes where the
  // CPU has AVX-512, for the whole vectors of sixteen, the same bits.
  const int64_t done =
      HasAvx512() ? SoftmaxExps16(exps, x, n, max_value, log, &sum) : 0;
  for (int64_t i = done; i < n; i += 8) {
    const int64_t lanes = std::min<int64_t>(8, n - i);
    const __m256 e = Exp8(_mm256_sub_ps(load(x, i, lanes), max));
    sum = AddWidened(sum, e);
    if (log) continue;
    if (lanes == 8) {
      _mm256_storeu_ps(exps + i, e);
    } else {
      StorePartial(exps + i, lanes, e);
    }
  }
  const double total = Sum4d(sum);
  if (log) {
    const LogSum log_sum(std::log(total));
    const __m256 high = _mm256_set1_ps(log_sum.high);
    const __m256 low = _mm256_set1_ps(log_sum.low);
    WriteFloats(y, n, stream, [&](int64_t i, int64_t lanes) {
      return LogSubtract(load(x, i, lanes), max, high, low);
    });
    return;
  }
  const __m256 scale = _mm256_set1_ps(static_cast<float>(1.0 / total));
  WriteFloats(y, n, stream && exps == buffer, [&](int64_t i, int64_t lanes) {
    return _mm256_mul_ps(load(exps, i, lanes), scale);
  });
}

// Softmax along a non-last axis works on blocks of 16 columns (one cache
// line a row): with n = 4096 rows a block's input and output, 512 KiB, stay
// in L2 across the three passes.
constexpr int64_t kSoftmaxColumns = 16;

// SoftmaxColumnsF32(): softmax (or log_softmax) down each column of `b`
// into y (same layout), the columns in registers: max, then e^(x - max) and
// its sums in double, then scale (or subtract the log-sums).
template <bool kFull>
void SoftmaxColumnsF32(float* y, const ColumnBlock& b, bool log) {
  constexpr int kVectors = kSoftmaxColumns / 8;
  const ColumnMasks masks(b.width);
  __m256 max[kVectors];
  for (int k = 0; k < kVectors; ++k) max[k] = masks.Load<kFull>(b.x, k);
  for (int64_t r = 1; r < b.n; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      max[k] = _mm256_max_ps(masks.Load<kFull>(b.x + r * b.stride, k), max[k]);
    }
  }
  const __m256 negative_infinity = _mm256_set1_ps(-__builtin_inff());
  for (int k = 0; k < kVectors; ++k) {  // all -inf columns
    max[k] =
        _mm256_blendv_ps(max[k], _mm256_setzero_ps(),
                         _mm256_cmp_ps(max[k], negative_infinity, _CMP_EQ_OQ));
  }
  __m256d sum[2 * kVectors];
  for (__m256d& lanes : sum) lanes = _mm256_setzero_pd();
  for (int64_t r = 0; r < b.n; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      const __m256 e =
          Exp8(_mm256_sub_ps(masks.Load<kFull>(b.x + r * b.stride, k), max[k]));
      sum[2 * k] =
          _mm256_add_pd(sum[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      sum[2 * k + 1] = _mm256_add_pd(
          sum[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
      if (!log) masks.Store<kFull>(y + r * b.stride, k, e);
    }
  }
  if (log) {
    alignas(32) double sums[kSoftmaxColumns];
    alignas(32) float highs[kSoftmaxColumns];
    alignas(32) float lows[kSoftmaxColumns];
    for (int k = 0; k < 2 * kVectors; ++k)
      _mm256_store_pd(sums + 4 * k, sum[k]);
    for (int64_t i = 0; i < kSoftmaxColumns; ++i) {
      const LogSum log_sum(std::log(sums[i]));
      highs[i] = log_sum.high;
      lows[i] = log_sum.low;
    }
    for (int64_t r = 0; r < b.n; ++r) {
      for (int k = 0; k < kVectors; ++k) {
        const __m256 x = masks.Load<kFull>(b.x + r * b.stride, k);
        masks.Store<kFull>(y + r * b.stride, k,
                           LogSubtract(x, max[k], _mm256_load_ps(highs + 8 * k),
                                       _mm256_load_ps(lows + 8 * k)));
      }
    }
    return;
  }
  __m256 scale[kVectors];
  const __m256d one = _mm256_set1_pd(1.0);
  for (int k = 0; k < kVectors; ++k) {
    scale[k] =
        _mm256_set_m128(_mm256_cvtpd_ps(_mm256_div_pd(one, sum[2 * k + 1])),
                        _mm256_cvtpd_ps(_mm256_div_pd(one, sum[2 * k])));
  }
  for (int64_t r = 0; r < b.n; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      float* row = y + r * b.stride;
      masks.Store<kFull>(row, k,
                         _mm256_mul_ps(masks.Load<kFull>(row, k), scale[k]));
    }
  }
}

void SoftmaxF32(float* y, const float* x, const Extent& e, bool log) {
  if (e.inner == 1) {
    const bool stream =
        e.outer * e.n * int64_t{sizeof(float)} >= kSoftmaxStreamingBytes;
    const int64_t grain = std::max<int64_t>(1, kSoftmaxGrain / e.n);
    ParallelFor(e.outer, grain, [&](int64_t begin, int64_t end) {
      alignas(32) float buffer[kSoftmaxBuffer];
      for (int64_t o = begin; o < end; ++o) {
        SoftmaxRowF32(y + o * e.n, x + o * e.n, e.n, log, stream, buffer);
      }
      if (stream) _mm_sfence();
    });
    return;
  }
  const int64_t grain =
      std::max<int64_t>(1, kSoftmaxGrain / (e.n * kSoftmaxColumns));
  ForEachColumnBlock(
      e, kSoftmaxColumns, grain, x, [&](const ColumnBlock& block, int64_t) {
        // y has x's layout.
        float* target = y + (block.x - x);
        WithFullness(block, kSoftmaxColumns, [&](auto full) {
          SoftmaxColumnsF32<decltype(full)::value>(target, block, log);
        });
      });
}

}  // namespace

void SoftmaxKernel(const TensorBase& out, const TensorBase& in, int axis,
                   bool log) {
  const TensorBase input = in.Contiguous();
  const Extent e = ExtentOf(input.shape(), axis);
  if (input.dtype() == DType::kF32) {
    SoftmaxF32(out.data_as<float>(), input.data_as<const float>(), e, log);
    return;
  }
  KINDLING_CHECK(input.dtype() == DType::kF64, "cpu softmax: dtype %s",
                 std::string(DTypeName(input.dtype())));
  const double* x = input.data_as<const double>();
  double* y = out.data_as<double>();
  const int64_t grain = std::max<int64_t>(1, kSoftmaxGrain / e.n);
  ParallelFor(e.outer * e.inner, grain, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / e.inner;
      const int64_t i = line % e.inner;
      const int64_t start = o * e.n * e.inner + i;
      SoftmaxLine<double>(y + start, x + start, e.n, e.inner, log);
    }
  });
}

}  // namespace kindling::cpu
