// Softmax and log_softmax along one axis on CUDA.
//
// Three passes over each line, as the CPU backend does: the max (0 when the
// whole line is -inf, so it stays finite), the sum of e^(x - max) in double
// (f32 in the 16-bit floats), then the scaled exponentials, or for
// log_softmax (x - max) - log(sum) rounded once. A line goes to a block
// (the common last-axis case, reads coalesced) or to a thread (many lines
// down a non-unit-stride axis, neighbouring threads reading neighbouring
// columns); see lines.h. The input may be any strided view.
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

__device__ inline float ExpC(float x) { return expf(x); }
__device__ inline double ExpC(double x) { return exp(x); }
__device__ inline float LogC(float x) { return logf(x); }
__device__ inline double LogC(double x) { return log(x); }

struct MaxCombine {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return b > a ? b : a;
  }
};
struct AddCombine {
  template <class C>
  __device__ C operator()(C a, C b) const {
    return a + b;
  }
};

// FiniteMax(): an all -inf line subtracts 0 instead of -inf.
template <class C>
__device__ inline C FiniteMax(C max_value) {
  return max_value == -__builtin_huge_val() ? C(0) : max_value;
}

// SoftmaxValue(): element x of a line with max `max_value`, exp-sum `sum`.
template <class T, class C, class Acc>
__device__ inline T SoftmaxValue(C x, C max_value, Acc sum, Acc log_sum,
                                 C scale, bool log) {
  if (log) return Convert<T>(static_cast<Acc>(x - max_value) - log_sum);
  return Convert<T>(ExpC(x - max_value) * scale);
}

template <class T>
__global__ void SoftmaxLinesBlock(StridedIndexer<2> lines, const T* in, T* out,
                                  int64_t n, int64_t in_stride,
                                  int64_t out_stride, bool log) {
  using C = ComputeType<T>;
  using Acc = SumType<T>;
  __shared__ C max_scratch[kLineThreads];
  __shared__ Acc sum_scratch[kLineThreads];
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    const T* x = in + offset[1];
    T* y = out + offset[0];
    C max_value = -__builtin_huge_val();
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const C v = ToCompute(x[k * in_stride]);
      max_value = v > max_value ? v : max_value;
    }
    max_value = FiniteMax(BlockReduce(max_value, max_scratch, MaxCombine{}));
    Acc sum = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      sum += static_cast<Acc>(ExpC(ToCompute(x[k * in_stride]) - max_value));
    }
    sum = BlockReduce(sum, sum_scratch, AddCombine{});
    const Acc log_sum = log ? LogC(sum) : Acc(0);
    const C scale = static_cast<C>(Acc(1) / sum);
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      y[k * out_stride] = SoftmaxValue<T>(ToCompute(x[k * in_stride]),
                                          max_value, sum, log_sum, scale, log);
    }
  }
}

template <class T>
__global__ void SoftmaxLinesThread(StridedIndexer<2> lines, const T* in, T* out,
                                   int64_t n, int64_t in_stride,
                                   int64_t out_stride, bool log) {
  using C = ComputeType<T>;
  using Acc = SumType<T>;
  for (int64_t line = GlobalThread(); line < lines.numel;
       line += GridThreads()) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    const T* x = in + offset[1];
    T* y = out + offset[0];
    C max_value = -__builtin_huge_val();
    for (int64_t k = 0; k < n; ++k) {
      const C v = ToCompute(x[k * in_stride]);
      max_value = v > max_value ? v : max_value;
    }
    max_value = FiniteMax(max_value);
    Acc sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      sum += static_cast<Acc>(ExpC(ToCompute(x[k * in_stride]) - max_value));
    }
    const Acc log_sum = log ? LogC(sum) : Acc(0);
    const C scale = static_cast<C>(Acc(1) / sum);
    for (int64_t k = 0; k < n; ++k) {
      y[k * out_stride] = SoftmaxValue<T>(ToCompute(x[k * in_stride]),
                                          max_value, sum, log_sum, scale, log);
    }
  }
}

}  // namespace

void SoftmaxKernel(cudaStream_t stream, const TensorBase& out,
                   const TensorBase& in, int axis, bool log) {
  const int64_t n = in.shape()[axis];
  const int64_t in_stride = in.strides()[axis];
  const int64_t out_stride = out.strides()[axis];
  const StridedIndexer<2> lines = LineIndexer(out, in, axis);
  if (lines.numel == 0 || n == 0) return;
  const bool block = UseBlockPerLine(lines.numel, n, in_stride);
  DispatchFloating(in.dtype(), "softmax", [&]<class T>() {
    const T* x = in.data_as<const T>();
    T* y = out.data_as<T>();
    if (block) {
      const int64_t blocks =
          lines.numel < kMaxGridBlocks ? lines.numel : kMaxGridBlocks;
      SoftmaxLinesBlock<T>
          <<<static_cast<unsigned>(blocks), kLineThreads, 0, stream>>>(
              lines, x, y, n, in_stride, out_stride, log);
      KINDLING_CUDA_CHECK_LAUNCH("SoftmaxLinesBlock");
    } else {
      const LaunchGrid grid = GridFor(lines.numel);
      SoftmaxLinesThread<T>
          <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(
              lines, x, y, n, in_stride, out_stride, log);
      KINDLING_CUDA_CHECK_LAUNCH("SoftmaxLinesThread");
    }
  });
}

}  // namespace kindling::cuda
