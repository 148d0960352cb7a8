// Reductions along one axis on CUDA: sum, mean, max, min, argmax, argmin.
//
// The input may be any strided view (no contiguous copy); lines.h maps
// each output element to its line. Sums accumulate in double for f32/f64
// (as the CPU backend does), in f32 for f16/bf16, wrapping for integers;
// max/min give NaN when the line holds one; argmax/argmin give the first
// index of the extreme, or of the first NaN, as the CPU backend does.
//
// Three launch shapes: a thread per line (many short or strided lines), a
// block per line, and, when a few very long lines would leave most of the
// GPU idle (a whole-tensor sum, a norm), each line split into fixed chunks,
// a block per chunk writing a partial state, and a second launch combining
// each line's partials in chunk order. The split depends only on the sizes,
// so results are the same on every run and every GPU.
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/backend/cuda/lines.h"

namespace kindling::cuda {
namespace {

// --- Sums --------------------------------------------------------------------

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
  __shared__ Acc scratch[kWarp];
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    Acc sum = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      sum += ToSum(in[offset[1] + k * stride]);
    }
    sum = BlockAllReduce(sum, scratch, AddCombine{});
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
  __shared__ Extreme<C> scratch[kWarp];
  const ExtremeCombine<kMax> combine;
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    Extreme<C> best{C{}, -1};
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      best =
          combine(best, Extreme<C>{ToCompute(in[offset[1] + k * stride]), k});
    }
    best = BlockAllReduce(best, scratch, combine);
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

// --- Long lines split over blocks ------------------------------------------

// LineSplit: each line cut into `chunks` pieces of `chunk` elements (the last
// one shorter).
struct LineSplit {
  int64_t chunks = 1;
  int64_t chunk = 0;
};

// Split only when the lines fill fewer than kSplitBelowBlocks blocks and a
// chunk keeps every thread of a block busy for several elements.
inline constexpr int64_t kSplitBelowBlocks = 512;
inline constexpr int64_t kMinChunk = 16 * kLineThreads;
inline constexpr int64_t kTargetBlocks = 1024;

LineSplit PlanLineSplit(int64_t lines, int64_t n) {
  LineSplit split;
  split.chunk = n;
  if (lines >= kSplitBelowBlocks || n < 2 * kMinChunk) return split;
  int64_t chunks = kTargetBlocks / lines;
  if (chunks > n / kMinChunk) chunks = n / kMinChunk;
  if (chunks < 2) return split;
  split.chunk = (n + chunks - 1) / chunks;
  split.chunks = (n + split.chunk - 1) / split.chunk;
  return split;
}

// Block b reduces chunk b % chunks of line b / chunks into partials[b];
// `load(in_offset, k)` is element k's state, `identity` the empty state.
template <class State, class Combine, class Load>
__global__ void PartialLinesKernel(StridedIndexer<2> lines, int64_t n,
                                   LineSplit split, State identity,
                                   Combine combine, Load load,
                                   State* partials) {
  __shared__ State scratch[kWarp];
  const int64_t count = lines.numel * split.chunks;
  for (int64_t b = blockIdx.x; b < count; b += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(b / split.chunks, offset);
    const int64_t begin = (b % split.chunks) * split.chunk;
    const int64_t end = begin + split.chunk < n ? begin + split.chunk : n;
    State state = identity;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
      state = combine(state, load(offset[1], k));
    }
    state = BlockAllReduce(state, scratch, combine);
    if (threadIdx.x == 0) partials[b] = state;
  }
}

// A thread per line combines its partials in chunk order and `finish(
// out_offset, state)` writes the result.
template <class State, class Combine, class Finish>
__global__ void FinishLinesKernel(StridedIndexer<2> lines, LineSplit split,
                                  const State* partials, Combine combine,
                                  Finish finish) {
  for (int64_t line = GlobalThread(); line < lines.numel;
       line += GridThreads()) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    const State* own = partials + line * split.chunks;
    State state = own[0];
    for (int64_t c = 1; c < split.chunks; ++c) state = combine(state, own[c]);
    finish(offset[0], state);
  }
}

// LaunchSplitLines(): the two launches, with the partials in a scratch
// tensor on `device` (the caching allocator reuses it stream-ordered).
template <class State, class Combine, class Load, class Finish>
void LaunchSplitLines(cudaStream_t stream, const Device& device,
                      const StridedIndexer<2>& lines, int64_t n,
                      const LineSplit& split, State identity, Combine combine,
                      Load load, Finish finish) {
  const int64_t blocks = lines.numel * split.chunks;
  const TensorBase scratch = TensorBase::Empty(
      Shape{blocks * static_cast<int64_t>(sizeof(State))}, DType::kU8, device);
  State* partials = scratch.data_as<State>();
  const int64_t grid = blocks < kMaxGridBlocks ? blocks : kMaxGridBlocks;
  PartialLinesKernel<<<static_cast<unsigned>(grid), kLineThreads, 0, stream>>>(
      lines, n, split, identity, combine, load, partials);
  KINDLING_CUDA_CHECK_LAUNCH("PartialLinesKernel");
  const LaunchGrid finish_grid = GridFor(lines.numel);
  FinishLinesKernel<<<static_cast<unsigned>(finish_grid.blocks),
                      finish_grid.threads, 0, stream>>>(lines, split, partials,
                                                        combine, finish);
  KINDLING_CUDA_CHECK_LAUNCH("FinishLinesKernel");
}

// Loads and finishers of the split launch, one per reduction family.
template <class T>
struct SumLoad {
  const T* in;
  int64_t stride;
  __device__ SumType<T> operator()(int64_t line_start, int64_t k) const {
    return ToSum(in[line_start + k * stride]);
  }
};
template <class T>
struct SumFinish {
  T* out;
  int64_t n;
  bool mean;
  __device__ void operator()(int64_t out_offset, SumType<T> sum) const {
    out[out_offset] = FinishSum<T>(sum, mean, n);
  }
};
template <class T>
struct ExtremeLoad {
  const T* in;
  int64_t stride;
  __device__ Extreme<ComputeType<T>> operator()(int64_t line_start,
                                                int64_t k) const {
    return {ToCompute(in[line_start + k * stride]), k};
  }
};
template <class T>
struct ExtremeFinish {
  T* values;
  int64_t* indices;
  __device__ void operator()(int64_t out_offset,
                             Extreme<ComputeType<T>> best) const {
    WriteExtreme<T>(best, values, indices, out_offset);
  }
};

template <class T, bool kMax>
void LaunchSplitExtreme(cudaStream_t stream, const Device& device,
                        const StridedIndexer<2>& lines, int64_t n,
                        const LineSplit& split, const T* input, T* values,
                        int64_t* indices, int64_t stride) {
  using C = ComputeType<T>;
  LaunchSplitLines(stream, device, lines, n, split, Extreme<C>{C{}, -1},
                   ExtremeCombine<kMax>{}, ExtremeLoad<T>{input, stride},
                   ExtremeFinish<T>{values, indices});
}

// Launch(): a block per line or a thread per line.
template <class BlockKernel, class ThreadKernel, class... Args>
void LaunchLines(const char* block_name, const char* thread_name,
                 cudaStream_t stream, const StridedIndexer<2>& lines,
                 bool block_per_line, BlockKernel block_kernel,
                 ThreadKernel thread_kernel, Args... args) {
  if (lines.numel == 0) return;
  if (block_per_line) {
    const int64_t blocks =
        lines.numel < kMaxGridBlocks ? lines.numel : kMaxGridBlocks;
    block_kernel<<<static_cast<unsigned>(blocks), kLineThreads, 0, stream>>>(
        lines, args...);
    KINDLING_CUDA_CHECK_LAUNCH(block_name);
  } else {
    const LaunchGrid grid = GridFor(lines.numel);
    thread_kernel<<<static_cast<unsigned>(grid.blocks), grid.threads, 0,
                    stream>>>(lines, args...);
    KINDLING_CUDA_CHECK_LAUNCH(thread_name);
  }
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
  const LineSplit split = block ? PlanLineSplit(lines.numel, n) : LineSplit{};
  DispatchDType<kNumericDTypes>(in.dtype(), "cuda reduce", [&]<class T>() {
    const T* input = in.data_as<const T>();
    T* values = arg ? nullptr : out.data_as<T>();
    int64_t* indices = arg ? out.data_as<int64_t>() : nullptr;
    if (split.chunks > 1) {
      const Device& device = in.device();
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          return LaunchSplitLines(
              stream, device, lines, n, split, SumType<T>{0}, AddCombine{},
              SumLoad<T>{input, stride},
              SumFinish<T>{values, n, op == ReduceOp::kMean});
        case ReduceOp::kMax:
        case ReduceOp::kArgMax:
          return LaunchSplitExtreme<T, true>(stream, device, lines, n, split,
                                             input, values, indices, stride);
        case ReduceOp::kMin:
        case ReduceOp::kArgMin:
          return LaunchSplitExtreme<T, false>(stream, device, lines, n, split,
                                              input, values, indices, stride);
      }
    }
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        return LaunchLines("SumLinesBlock", "SumLinesThread", stream, lines,
                           block, SumLinesBlock<T>, SumLinesThread<T>, input,
                           values, n, stride, op == ReduceOp::kMean);
      case ReduceOp::kMax:
      case ReduceOp::kArgMax:
        return LaunchLines("ExtremeLinesBlock", "ExtremeLinesThread", stream,
                           lines, block, ExtremeLinesBlock<T, true>,
                           ExtremeLinesThread<T, true>, input, values, indices,
                           n, stride);
      case ReduceOp::kMin:
      case ReduceOp::kArgMin:
        return LaunchLines("ExtremeLinesBlock", "ExtremeLinesThread", stream,
                           lines, block, ExtremeLinesBlock<T, false>,
                           ExtremeLinesThread<T, false>, input, values, indices,
                           n, stride);
    }
  });
}

}  // namespace kindling::cuda
