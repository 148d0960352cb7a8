#include <algorithm>

#include "kindling/backend/cuda/cuda_check.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::cuda::testing {
namespace {

constexpr int kThreads = 256;

// Grid-stride loops: any n with a grid within the 2^31 - 1 block limit.
__global__ void IotaKernel(float* out, int64_t n, float start) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = start + static_cast<float>(i);
  }
}

__global__ void AddOneKernel(float* data, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    data[i] += 1.0f;
  }
}

// GlobalTimer() is the GPU's nanosecond clock (the same on every SM).
__device__ uint64_t GlobalTimer() {
  uint64_t nanoseconds;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(nanoseconds));
  return nanoseconds;
}

// One thread waits until `nanoseconds` have passed, so that work queued after
// it on its stream starts that much later.
__global__ void SpinKernel(int64_t nanoseconds) {
  const uint64_t start = GlobalTimer();
  while (GlobalTimer() - start < static_cast<uint64_t>(nanoseconds)) {
  }
}

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535));
}

}  // namespace

void LaunchIota(float* out, int64_t n, float start, cudaStream_t stream) {
  IotaKernel<<<Blocks(n), kThreads, 0, stream>>>(out, n, start);
  KINDLING_CUDA_CHECK_LAUNCH("IotaKernel");
}

void LaunchAddOne(float* data, int64_t n, cudaStream_t stream) {
  AddOneKernel<<<Blocks(n), kThreads, 0, stream>>>(data, n);
  KINDLING_CUDA_CHECK_LAUNCH("AddOneKernel");
}

void LaunchSpin(int64_t nanoseconds, cudaStream_t stream) {
  SpinKernel<<<1, 1, 0, stream>>>(nanoseconds);
  KINDLING_CUDA_CHECK_LAUNCH("SpinKernel");
}

}  // namespace kindling::cuda::testing
