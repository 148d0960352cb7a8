// Reductions on the CPU (softmax, which shares the layouts: softmax.cc).
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
// precision, and the widening is free next to memory bandwidth.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/reduce_layout.h"
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

// SumColumns(): sums of the block's columns (divided by n for a mean).
template <bool kFull>
void SumColumns(float* out, const ColumnBlock& b, bool mean) {
  const ColumnMasks masks(b.width);
  SumColumnsOf<kFull>(out, masks, b.n, mean, [&](int64_t r, int k) {
    return masks.Load<kFull>(b.x + r * b.stride, k);
  });
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
  DispatchDType<kArithmeticDTypes>(input.dtype(), "cpu reduce", [&]<class T>() {
    T* values = arg ? nullptr : out.data_as<T>();
    int64_t* indices = arg ? out.data_as<int64_t>() : nullptr;
    if (extent.inner == 1) {
      ReduceRows<T>(op, values, indices, input.data_as<const T>(), extent);
    } else {
      ReduceColumns<T>(op, values, indices, input.data_as<const T>(), extent);
    }
  });
}

float RowMaxF32(const float* x, int64_t n) { return ExtremeRowF32<true>(x, n); }

}  // namespace kindling::cpu
