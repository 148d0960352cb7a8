// Reductions along one axis on CUDA: sum, mean, max, min, argmax, argmin.
//
// The input may be any strided view (no contiguous copy); lines.h maps
// each output element to its line. Sums accumulate in double for f32/f64
// (as the CPU backend does), in f32 for f16/bf16, wrapping for integers;
// max/min give NaN when the line holds one; argmax/argmin give the first
// index of the extreme, or of the first NaN, as the CPU backend does.
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/backend/cuda/lines.h"

namespace kindling::cuda {
namespace {

// --- Sums --------------------------------------------------------------------

struct SumCombine {
  template <class Acc>
  __device__ Acc operator()(Acc a, Acc b) const {
    return a + b;
  }
};

template <class T>
__device__ inline SumType<T> ToSum(T value) {
  return static_cast<SumType<T>>(ToCompute(value));
}

// FinishSum(): the stored sum or mean of n elements.
template <class T>
__device__ inline T FinishSum(SumType<T> sum, bool mean, int64_t n) {
  if constexpr (std::is_integral_v<SumType<T>>) {
    const int64_t signed_sum = static_cast<int64_t>(sum);
    return static_cast<T>(mean ? signed_sum / n : signed_sum);
  } else {
    using Acc = SumType<T>;
    return Convert<T>(mean ? sum / static_cast<Acc>(n) : sum);
  }
}

template <class T>
__global__ void SumLinesBlock(StridedIndexer<2> lines, const T* in, T* out,
                              int64_t n, int64_t stride, bool mean) {
  using Acc = SumType<T>;
  __shared__ Acc scratch[kLineThreads];
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    Acc sum = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      sum += ToSum(in[offset[1] + k * stride]);
    }
    sum = BlockReduce(sum, scratch, SumCombine{});
    if (threadIdx.x == 0) out[offset[0]] = FinishSum<T>(sum, mean, n);
  }
}

template <class T>
__global__ void SumLinesThread(StridedIndexer<2> lines, const T* in, T* out,
                               int64_t n, int64_t stride, bool mean) {
  for (int64_t line = GlobalThread(); line < lines.numel;
       line += GridThreads()) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    SumType<T> sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += ToSum(in[offset[1] + k * stride]);
    out[offset[0]] = FinishSum<T>(sum, mean, n);
  }
}

// --- Extremes -------------------------------------------------------------

// Extreme: the best value seen and its index (-1: none yet).
template <class C>
struct Extreme {
  C value;
  int64_t index;
};

template <class C>
__device__ inline bool IsNanC(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return x != x;
  } else {
    return false;
  }
}

// ExtremeCombine: NaN beats everything, then the larger (kMax) or smaller
// value, then the lower index, so the result does not depend on how the
// line was split over threads.
template <bool kMax>
struct ExtremeCombine {
  template <class C>
  __device__ Extreme<C> operator()(Extreme<C> a, Extreme<C> b) const {
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    const bool a_nan = IsNanC(a.value);
    const bool b_nan = IsNanC(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return b.index < a.index ? b : a;
      return a_nan ? a : b;
    }
    if (a.value == b.value) return b.index < a.index ? b : a;
    const bool b_better = kMax ? b.value > a.value : b.value < a.value;
    return b_better ? b : a;
  }
};

// Writes the extreme: its value (T* values) or its index (int64 indices).
template <class T>
__device__ inline void WriteExtreme(const Extreme<ComputeType<T>>& best,
                                    T* values, int64_t* indices,
                                    int64_t out_offset) {
  if (indices != nullptr) {
    indices[out_offset] = best.index;
  } else {
    values[out_offset] = Convert<T>(best.value);
  }
}

template <class T, bool kMax>
__global__ void ExtremeLinesBlock(StridedIndexer<2> lines, const T* in,
                                  T* values, int64_t* indices, int64_t n,
                                  int64_t stride) {
  using C = ComputeType<T>;
  __shared__ Extreme<C> scratch[kLineThreads];
  const ExtremeCombine<kMax> combine;
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    Extreme<C> best{C{}, -1};
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      best =
          combine(best, Extreme<C>{ToCompute(in[offset[1] + k * stride]), k});
    }
    best = BlockReduce(best, scratch, combine);
    if (threadIdx.x == 0) WriteExtreme<T>(best, values, indices, offset[0]);
  }
}

template <class T, bool kMax>
__global__ void ExtremeLinesThread(StridedIndexer<2> lines, const T* in,
                                   T* values, int64_t* indices, int64_t n,
                                   int64_t stride) {
  using C = ComputeType<T>;
  const ExtremeCombine<kMax> combine;
  for (int64_t line = GlobalThread(); line < lines.numel;
       line += GridThreads()) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    Extreme<C> best{C{}, -1};
    for (int64_t k = 0; k < n; ++k) {
      best =
          combine(best, Extreme<C>{ToCompute(in[offset[1] + k * stride]), k});
    }
    WriteExtreme<T>(best, values, indices, offset[0]);
  }
}

// Launch(): a block per line or a thread per line.
template <class BlockKernel, class ThreadKernel, class... Args>
void LaunchLines(cudaStream_t stream, const StridedIndexer<2>& lines,
                 bool block_per_line, BlockKernel block_kernel,
                 ThreadKernel thread_kernel, Args... args) {
  if (lines.numel == 0) return;
  if (block_per_line) {
    const int64_t blocks =
        lines.numel < kMaxGridBlocks ? lines.numel : kMaxGridBlocks;
    block_kernel<<<static_cast<unsigned>(blocks), kLineThreads, 0, stream>>>(
        lines, args...);
  } else {
    const LaunchGrid grid = GridFor(lines.numel);
    thread_kernel<<<static_cast<unsigned>(grid.blocks), grid.threads, 0,
                    stream>>>(lines, args...);
  }
  KINDLING_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void ReduceKernel(cudaStream_t stream, ReduceOp op, const TensorBase& out,
                  const TensorBase& in, int axis) {
  const int64_t n = in.shape()[axis];
  const int64_t stride = in.strides()[axis];
  const StridedIndexer<2> lines = LineIndexer(out, in, axis);
  if (lines.numel == 0) return;
  const bool block = UseBlockPerLine(lines.numel, n, stride);
  const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
  KINDLING_CHECK(n > 0 || op == ReduceOp::kSum || op == ReduceOp::kMean,
                 "cuda reduce op %d over an empty axis %d of %s",
                 static_cast<int>(op), axis, in.shape().ToString());
  DispatchNumeric(in.dtype(), "reduce", [&]<class T>() {
    const T* input = in.data_as<const T>();
    T* values = arg ? nullptr : out.data_as<T>();
    int64_t* indices = arg ? out.data_as<int64_t>() : nullptr;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        return LaunchLines(stream, lines, block, SumLinesBlock<T>,
                           SumLinesThread<T>, input, values, n, stride,
                           op == ReduceOp::kMean);
      case ReduceOp::kMax:
      case ReduceOp::kArgMax:
        return LaunchLines(stream, lines, block, ExtremeLinesBlock<T, true>,
                           ExtremeLinesThread<T, true>, input, values, indices,
                           n, stride);
      case ReduceOp::kMin:
      case ReduceOp::kArgMin:
        return LaunchLines(stream, lines, block, ExtremeLinesBlock<T, false>,
                           ExtremeLinesThread<T, false>, input, values, indices,
                           n, stride);
    }
  });
}

}  // namespace kindling::cuda
