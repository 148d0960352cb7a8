// Gradient-clipping kernels on CUDA: AbsPowerSum (a two-level device
// reduction and one device-to-host copy of the result) and ScaleClamp (the
// CPU's element_math::Clamp). The update rules' fused kernels live in
// optim/cuda/.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/backend/cuda/lines.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cuda {
namespace {

// --- Norm ----------------------------------------------------------------

// kNormThreads x kNormBlocks partial sums: a fixed split, so the result does
// not depend on the GPU, only on the element count.
constexpr int kNormThreads = 256;
static_assert(kNormThreads % kWarp == 0 &&
              kNormThreads <= kMaxBlockReduceThreads);
constexpr int kNormBlocks = 1024;

struct NormCombine {
  bool max;
  __device__ double operator()(double a, double b) const {
    if (!max) return a + b;
    return b > a || b != b ? b : a;  // NaN propagates
  }
};

template <class T>
__device__ inline double AbsPowerTerm(T value, double p, int mode) {
  const double x = static_cast<double>(ToCompute(value));
  switch (mode) {
    case 0:  // max |x|
    case 1:  // p == 1
      return fabs(x);
    case 2:  // p == 2
      return x * x;
    default:
      return pow(fabs(x), p);
  }
}

// First level: block b reduces elements b*256+t, stepping the grid, into
// partial[b].
template <class T>
__global__ void AbsPowerPartial(const T* data, int64_t count, double p,
                                int mode, double* partial) {
  __shared__ double scratch[kWarp];
  const NormCombine combine{mode == 0};
  double total = 0;
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    total = combine(total, AbsPowerTerm(data[i], p, mode));
  }
  total = BlockAllReduce(total, scratch, combine);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// Second level: one block reduces the partials into partial[0]... written to
// `result`.
__global__ void AbsPowerFinal(const double* partial, int count, int mode,
                              double* result) {
  __shared__ double scratch[kWarp];
  const NormCombine combine{mode == 0};
  double total = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    total = combine(total, partial[i]);
  }
  total = BlockAllReduce(total, scratch, combine);
  if (threadIdx.x == 0) *result = total;
}

template <class T>
struct ScaleClampOp {
  T* data;
  ComputeType<T> factor;
  ComputeType<T> low;
  ComputeType<T> high;
  __device__ void operator()(int64_t i) const {
    // NaN stays NaN, like torch.clamp.
    data[i] =
        Convert<T>(element_math::Clamp(ToCompute(data[i]) * factor, low, high));
  }
};

}  // namespace

double AbsPowerSumKernel(cudaStream_t stream, const TensorBase& in, double p) {
  KINDLING_CHECK(in.is_contiguous(), "cuda AbsPowerSum: %s is strided",
                 in.ToString());
  KINDLING_CHECK(p > 0, "cuda AbsPowerSum: p = %g must be positive", p);
  const int64_t count = in.numel();
  if (count == 0) return 0;
  const int mode = std::isinf(p) ? 0 : (p == 1 ? 1 : (p == 2 ? 2 : 3));
  // Partials and the result live in one small device buffer from the
  // device's allocator (cached, so no cudaMalloc on the hot path).
  const TensorBase scratch =
      TensorBase::Empty(Shape{kNormBlocks + 1}, DType::kF64, in.device());
  double* partial = scratch.data_as<double>();
  double* result = partial + kNormBlocks;
  const int64_t needed = (count + kNormThreads - 1) / kNormThreads;
  const int blocks =
      static_cast<int>(needed < kNormBlocks ? needed : kNormBlocks);
  DispatchDType<kFloatingDTypes>(
      in.dtype(), "cuda AbsPowerSum", [&]<class T>() {
        AbsPowerPartial<T><<<blocks, kNormThreads, 0, stream>>>(
            in.data_as<const T>(), count, p, mode, partial);
        KINDLING_CUDA_CHECK_LAUNCH("AbsPowerPartial");
      });
  AbsPowerFinal<<<1, kNormThreads, 0, stream>>>(partial, blocks, mode, result);
  KINDLING_CUDA_CHECK_LAUNCH("AbsPowerFinal");
  double host = 0;
  KINDLING_CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof(double),
                                      cudaMemcpyDeviceToHost, stream));
  KINDLING_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void ScaleClampKernel(cudaStream_t stream, const TensorBase& inout,
                      double scale, double max_abs) {
  KINDLING_CHECK(inout.is_contiguous(), "cuda ScaleClamp: %s is strided",
                 inout.ToString());
  DispatchDType<kFloatingDTypes>(
      inout.dtype(), "cuda ScaleClamp", [&]<class T>() {
        using C = ComputeType<T>;
        const C high = static_cast<C>(max_abs);
        LaunchContiguous("ScaleClampOp", stream, inout.numel(),
                         ScaleClampOp<T>{inout.data_as<T>(),
                                         static_cast<C>(scale), -high, high});
      });
}

}  // namespace kindling::cuda
