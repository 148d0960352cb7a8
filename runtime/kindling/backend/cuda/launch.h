// LaunchStrided(): the grid-stride element-wise launch every CUDA kernel
// file shares. `op(offsets)` runs once per element of the indexer's shape
// with each operand's element offset; ops are small structs holding typed
// pointers and scalars, passed to the kernel by value. `kernel` (a string
// literal, usually the op's name) names the launch in error messages
// (cuda_check.h).
#ifndef KINDLING_BACKEND_CUDA_LAUNCH_H_
#define KINDLING_BACKEND_CUDA_LAUNCH_H_

#if !defined(__CUDACC__)
#error "device code: include this header from .cu files only"
#endif

#include <cuda_runtime.h>

#include <cstdint>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/strided_index.h"

namespace kindling::cuda {

// GlobalThread() / GridThreads(): a grid-stride loop's start and step, in
// int64 so that n >= 2^31 elements index correctly.
__device__ inline int64_t GlobalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t GridThreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

template <int N, class Op>
__global__ void StridedElementKernel(StridedIndexer<N> indexer, Op op) {
  for (int64_t i = GlobalThread(); i < indexer.numel; i += GridThreads()) {
    int64_t offsets[N];
    indexer.Offsets(i, offsets);
    op(offsets);
  }
}

template <int N, class Op>
void LaunchStrided(const char* kernel, cudaStream_t stream,
                   const StridedIndexer<N>& indexer, const Op& op) {
  if (indexer.numel == 0) return;
  const LaunchGrid grid = GridFor(indexer.numel);
  StridedElementKernel<N, Op>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(indexer,
                                                                        op);
  KINDLING_CUDA_CHECK_LAUNCH(kernel);
}

// ContiguousKernel: op(i) for i < count (every operand contiguous).
template <class Op>
__global__ void ContiguousElementKernel(int64_t count, Op op) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) op(i);
}

template <class Op>
void LaunchContiguous(const char* kernel, cudaStream_t stream, int64_t count,
                      const Op& op) {
  if (count == 0) return;
  const LaunchGrid grid = GridFor(count);
  ContiguousElementKernel<Op>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(count,
                                                                        op);
  KINDLING_CUDA_CHECK_LAUNCH(kernel);
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_LAUNCH_H_
