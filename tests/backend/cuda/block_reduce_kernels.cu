#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "tests/backend/cuda/block_reduce_kernels.h"

namespace kindling::cuda::testing {
namespace {

// ThenApply: combine(f, g) is g after f.
struct ThenApply {
  __device__ AffineMap operator()(AffineMap f, AffineMap g) const {
    return {g.scale * f.scale, g.scale * f.shift + g.shift};
  }
};

__global__ void ComposeKernel(const AffineMap* maps, AffineMap* results) {
  __shared__ AffineMap scratch[kWarp];
  results[threadIdx.x] =
      BlockAllReduce(maps[threadIdx.x], scratch, ThenApply{});
}

}  // namespace

void ComposeInBlock(const AffineMap* maps, int threads, AffineMap* results) {
  const size_t bytes = sizeof(AffineMap) * threads;
  AffineMap* device_maps = nullptr;
  AffineMap* device_results = nullptr;
  KINDLING_CUDA_CHECK(cudaMalloc(&device_maps, bytes));
  KINDLING_CUDA_CHECK(cudaMalloc(&device_results, bytes));
  KINDLING_CUDA_CHECK(
      cudaMemcpy(device_maps, maps, bytes, cudaMemcpyHostToDevice));
  ComposeKernel<<<1, threads>>>(device_maps, device_results);
  KINDLING_CUDA_CHECK_LAUNCH("ComposeKernel");
  KINDLING_CUDA_CHECK(
      cudaMemcpy(results, device_results, bytes, cudaMemcpyDeviceToHost));
  KINDLING_CUDA_CHECK(cudaFree(device_maps));
  KINDLING_CUDA_CHECK(cudaFree(device_results));
}

}  // namespace kindling::cuda::testing
