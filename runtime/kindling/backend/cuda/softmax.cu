// Softmax and log_softmax along one axis on CUDA.
//
// Three passes over each line, as the CPU backend does: the max (0 when the
// whole line is -inf, so it stays finite), the sum of e^(x - max) in double
// (f32 in the 16-bit floats), then the scaled exponentials, or for
// log_softmax (x - max) - log(sum) rounded once. A line goes to a block
// (the common last-axis case, reads coalesced) or to a thread (many lines
// down a non-unit-stride axis, neighbouring threads reading neighbouring
// columns); see lines.h. The input may be any strided view. Contiguous f32
// rows that fit in shared memory take SoftmaxRowsF32x4 instead: read once,
// as float4.
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

__device__ inline float ExpC(float x) { return expf(x); }
__device__ inline double ExpC(double x) { return exp(x); }
__device__ inline float LogC(float x) { return logf(x); }
__device__ inline double LogC(double x) { return log(x); }

// LineMaxCombine: the larger of a and b, keeping `a` unless b is larger.
// With NaNs or signed zeros the operands' order picks which one comes out,
// yet it is declared commutative (the order-free butterfly, block_reduce.h)
// because softmax's outputs cannot tell: x - (+0) equals x - (-0), and a NaN
// anywhere in a line makes every output of the line NaN whether the max is
// that NaN (x - NaN) or not (the sum of exponentials is NaN). The ordered
// butterfly made SoftmaxRowsF32x4 3% slower on [8192, 4096] on an H200
// (0.78 against 0.80 of a device-to-device memcpy).
struct LineMaxCombine {
  static constexpr bool kCommutative = true;
  template <class C>
  __device__ C operator()(C a, C b) const {
    return b > a ? b : a;
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
  __shared__ C max_scratch[kWarp];
  __shared__ Acc sum_scratch[kWarp];
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
    max_value =
        FiniteMax(BlockAllReduce(max_value, max_scratch, LineMaxCombine{}));
    Acc sum = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      sum += static_cast<Acc>(ExpC(ToCompute(x[k * in_stride]) - max_value));
    }
    sum = BlockAllReduce(sum, sum_scratch, AddCombine{});
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

// --- f32 rows read once, 16 bytes at a time -------------------------------

// kRowCacheBytes: the largest f32 row SoftmaxRowsF32x4 keeps in shared
// memory (below the 48 KiB a launch gets without opting in).
constexpr int64_t kRowCacheBytes = 40 * 1024;

// SoftmaxRowsF32x4: f32 lines of unit stride in and out, n a multiple of 4,
// every line start 16-byte aligned (SoftmaxKernel checks): a block per line
// reads it from global memory once, as float4, into shared memory (each
// thread only reads back the entries it wrote, so the cache needs no
// barrier), and takes the max, the double sum of exponentials and the
// output from there. Same arithmetic per element as SoftmaxLinesBlock; the
// sums add in another order. The three-pass SoftmaxLinesBlock reached 0.58x
// of a device-to-device memcpy on [8192, 4096] on an H100.
__global__ void __launch_bounds__(kLineThreads)
    SoftmaxRowsF32x4(StridedIndexer<2> lines, const float* in, float* out,
                     int64_t n, bool log) {
  extern __shared__ __align__(16) unsigned char row_cache_bytes[];
  float4* cache = reinterpret_cast<float4*>(row_cache_bytes);
  __shared__ float max_scratch[kWarp];
  __shared__ double sum_scratch[kWarp];
  const int64_t n4 = n / 4;
  const LineMaxCombine max_of;
  for (int64_t line = blockIdx.x; line < lines.numel; line += gridDim.x) {
    int64_t offset[2];
    lines.Offsets(line, offset);
    const float4* x = reinterpret_cast<const float4*>(in + offset[1]);
    float4* y = reinterpret_cast<float4*>(out + offset[0]);
    float max_value = -__builtin_huge_valf();
    for (int64_t k = threadIdx.x; k < n4; k += blockDim.x) {
      const float4 v = x[k];
      cache[k] = v;
      max_value = max_of(max_of(max_of(max_of(max_value, v.x), v.y), v.z), v.w);
    }
    max_value = FiniteMax(BlockAllReduce(max_value, max_scratch, max_of));
    double sum = 0;
    for (int64_t k = threadIdx.x; k < n4; k += blockDim.x) {
      const float4 v = cache[k];
      sum += static_cast<double>(expf(v.x - max_value));
      sum += static_cast<double>(expf(v.y - max_value));
      sum += static_cast<double>(expf(v.z - max_value));
      sum += static_cast<double>(expf(v.w - max_value));
    }
    sum = BlockAllReduce(sum, sum_scratch, AddCombine{});
    const double log_sum = log ? LogC(sum) : 0.0;
    const float scale = static_cast<float>(1.0 / sum);
    for (int64_t k = threadIdx.x; k < n4; k += blockDim.x) {
      const float4 v = cache[k];
      y[k] = make_float4(
          SoftmaxValue<float>(v.x, max_value, sum, log_sum, scale, log),
          SoftmaxValue<float>(v.y, max_value, sum, log_sum, scale, log),
          SoftmaxValue<float>(v.z, max_value, sum, log_sum, scale, log),
          SoftmaxValue<float>(v.w, max_value, sum, log_sum, scale, log));
    }
  }
}

// UseF32x4Rows(): whether SoftmaxRowsF32x4 applies to these operands.
bool UseF32x4Rows(const TensorBase& out, const TensorBase& in, int axis) {
  const int64_t n = in.shape()[axis];
  if (in.dtype() != DType::kF32 || in.strides()[axis] != 1 ||
      out.strides()[axis] != 1 || n % 4 != 0 ||
      n * static_cast<int64_t>(sizeof(float)) > kRowCacheBytes) {
    return false;
  }
  if (reinterpret_cast<uintptr_t>(in.data_as<const float>()) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(out.data_as<const float>()) % 16 != 0) {
    return false;
  }
  // Every line start a multiple of 4 elements from the data pointer.
  for (int i = 0; i < in.rank(); ++i) {
    if (i == axis || in.shape()[i] == 1) continue;
    if (in.strides()[i] % 4 != 0 || out.strides()[i] % 4 != 0) return false;
  }
  return true;
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
  if (block && UseF32x4Rows(out, in, axis)) {
    const int64_t blocks =
        lines.numel < kMaxGridBlocks ? lines.numel : kMaxGridBlocks;
    SoftmaxRowsF32x4<<<static_cast<unsigned>(blocks), kLineThreads,
                       static_cast<size_t>(n) * sizeof(float), stream>>>(
        lines, in.data_as<const float>(), out.data_as<float>(), n, log);
    KINDLING_CUDA_CHECK_LAUNCH("SoftmaxRowsF32x4");
    return;
  }
  DispatchDType<kFloatingDTypes>(in.dtype(), "cuda softmax", [&]<class T>() {
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
