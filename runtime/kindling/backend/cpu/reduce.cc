// Reductions and softmax on the CPU.
//
// The input is made contiguous and viewed as [outer, n, inner], reducing n:
//   * inner == 1 (the last axis, or a whole tensor): each output is a dot-like
//     pass over n contiguous elements with 16 independent accumulators, so
//     the loop vectorizes without reassociation flags. A single long row (a
//     whole-tensor sum) is split across threads and the partials combined.
//   * inner > 1: rows of `inner` contiguous elements are accumulated into the
//     output row, which vectorizes along inner.
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

// Floats are summed in blocks: 32 float lanes each add 16 elements (exact to
// a few float ulps of a 16-term sum), then the block goes into a double. This
// keeps double's accuracy over millions of elements at float's speed (8
// lanes per instruction, no conversions in the inner loop).
template <>
double SumRow<float>(const float* x, int64_t n) {
  constexpr int kFloatLanes = 32;
  constexpr int64_t kBlock = kFloatLanes * 16;
  double total = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float lanes[kFloatLanes] = {};
    for (int64_t k = 0; k < kBlock; k += kFloatLanes) {
      for (int j = 0; j < kFloatLanes; ++j) lanes[j] += x[i + k + j];
    }
    double block = 0;
    for (int j = 0; j < kFloatLanes; ++j) block += lanes[j];
    total += block;
  }
  for (; i < n; ++i) total += x[i];
  return total;
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
// element is NaN. The lanes update with plain selects (vmaxps-style) and
// record NaNs in a parallel lane array, so the loop vectorizes.
template <class T, bool kMax>
T ExtremeRow(const T* x, int64_t n) {
  T lanes[kLanes];
  T nan_lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    lanes[j] = x[0];
    nan_lanes[j] = T{0};
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const T v = x[i + j];
      if constexpr (kMax) {
        lanes[j] = v > lanes[j] ? v : lanes[j];
      } else {
        lanes[j] = v < lanes[j] ? v : lanes[j];
      }
      nan_lanes[j] = v != v ? T{1} : nan_lanes[j];
    }
  }
  T best = lanes[0];
  bool nan_seen = false;
  for (int j = 0; j < kLanes; ++j) {
    best = kMax ? (lanes[j] > best ? lanes[j] : best)
                : (lanes[j] < best ? lanes[j] : best);
    nan_seen |= nan_lanes[j] != T{0};
  }
  for (; i < n; ++i) {
    const T v = x[i];
    best = kMax ? (v > best ? v : best) : (v < best ? v : best);
    nan_seen |= v != v;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan_seen) return std::numeric_limits<T>::quiet_NaN();
  }
  return best;
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

// Reduces [outer, n] rows (inner == 1).
template <class T>
void ReduceRows(ReduceOp op, T* out, int64_t* arg_out, const T* in,
                const Extent& e) {
  const bool sum_like = op == ReduceOp::kSum || op == ReduceOp::kMean;
  if (e.outer == 1 && sum_like && e.n >= 2 * kElementGrain) {
    // One long row: a partial sum per chunk, combined in order.
    const int64_t chunks =
        std::min<int64_t>(MaxThreads() * kChunksPerThread, e.n / kElementGrain);
    std::vector<SumType<T>> partial(chunks, SumType<T>{0});
    ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        const int64_t first = e.n * chunk / chunks;
        const int64_t last = e.n * (chunk + 1) / chunks;
        partial[chunk] = SumRow(in + first, last - first);
      }
    });
    SumType<T> total = 0;
    for (const SumType<T>& value : partial) total += value;
    out[0] = FinishSum<T>(total, op, e.n);
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
          arg_out[o] = ArgExtreme<T, true>(row, e.n, 1);
          break;
        case ReduceOp::kArgMin:
          arg_out[o] = ArgExtreme<T, false>(row, e.n, 1);
          break;
      }
    }
  });
}

// Reduces [outer, n, inner] along n with inner > 1.
template <class T>
void ReduceColumns(ReduceOp op, T* out, int64_t* arg_out, const T* in,
                   const Extent& e) {
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

// ExpShifted() is e^(x - shift): VectorExp for float (so loops over it
// vectorize), std::exp for double.
template <class T>
T ExpShifted(T x, T shift) {
  if constexpr (std::is_same_v<T, float>) {
    return VectorExp(x - shift);
  } else {
    return std::exp(x - shift);
  }
}

// Softmax of x[k * stride], k < n, into y (same stride); max-subtracted so
// exp never overflows, sums in double. Unit-stride lines run as separate
// simple passes (max, exp, sum, scale) that each vectorize.
template <class T>
void SoftmaxLine(T* y, const T* x, int64_t n, int64_t stride, bool log) {
  T max_value = x[0];
  if (stride == 1) {
    max_value = ExtremeRow<T, true>(x, n);
  } else {
    for (int64_t k = 1; k < n; ++k) {
      const T v = x[k * stride];
      max_value = v > max_value ? v : max_value;
    }
  }
  if (std::isinf(max_value) && max_value < 0) max_value = 0;  // all -inf
  double sum = 0;
  if (stride == 1) {
    for (int64_t k = 0; k < n; ++k) y[k] = ExpShifted(x[k], max_value);
    sum = SumRow(y, n);
  } else {
    for (int64_t k = 0; k < n; ++k) {
      const T e = ExpShifted(x[k * stride], max_value);
      y[k * stride] = e;
      sum += e;
    }
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
  if (stride == 1) {
    for (int64_t k = 0; k < n; ++k) y[k] *= scale;
  } else {
    for (int64_t k = 0; k < n; ++k) y[k * stride] *= scale;
  }
}

}  // namespace

void SoftmaxKernel(const TensorBase& out, const TensorBase& in, int axis,
                   bool log) {
  const TensorBase input = in.Contiguous();
  const Extent e = ExtentOf(input.shape(), axis);
  auto run = [&]<class T>() {
    const T* x = input.data_as<const T>();
    T* y = out.data_as<T>();
    const int64_t lines = e.outer * e.inner;
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 13) / e.n);
    ParallelFor(lines, grain, [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / e.inner;
        const int64_t i = line % e.inner;
        const int64_t start = o * e.n * e.inner + i;
        SoftmaxLine<T>(y + start, x + start, e.n, e.inner, log);
      }
    });
  };
  if (input.dtype() == DType::kF64) {
    run.template operator()<double>();
  } else {
    KINDLING_CHECK(input.dtype() == DType::kF32, "cpu softmax: dtype %s",
                   std::string(DTypeName(input.dtype())));
    run.template operator()<float>();
  }
}

}  // namespace kindling::cpu
