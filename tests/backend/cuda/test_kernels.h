// Test kernels for the CUDA runtime tests: launchers callable from .cc code.
#ifndef KINDLING_TESTS_BACKEND_CUDA_TEST_KERNELS_H_
#define KINDLING_TESTS_BACKEND_CUDA_TEST_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kindling::cuda::testing {

// LaunchIota() enqueues out[i] = start + i for i < n on `stream`.
void LaunchIota(float* out, int64_t n, float start, cudaStream_t stream);

// LaunchAddOne() enqueues data[i] += 1 for i < n on `stream`.
void LaunchAddOne(float* data, int64_t n, cudaStream_t stream);

// LaunchSpin() enqueues a kernel that keeps `stream` busy for `nanoseconds`
// (by the GPU's clock), delaying the work queued after it.
void LaunchSpin(int64_t nanoseconds, cudaStream_t stream);

}  // namespace kindling::cuda::testing

#endif  // KINDLING_TESTS_BACKEND_CUDA_TEST_KERNELS_H_
