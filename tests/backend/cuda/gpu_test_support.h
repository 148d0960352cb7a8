// KINDLING_NEED_CUDA_DEVICES(n): the first statement of a GPU test case.
//
// It runs the case when `n` CUDA devices are usable; otherwise it skips,
// saying why ("no CUDA device visible: ..."), or fails: always when CUDA
// failed to initialize (a driver is there and broken), and when the run
// requires the devices (KINDLING_REQUIRE_GPU, set by the GPU bundle's
// runner), so a GPU machine can never pass by skipping
// (kindling/backend/cuda/gpu_requirement.h). Usable in a test body or a
// fixture's SetUp().
#ifndef KINDLING_TESTS_BACKEND_CUDA_GPU_TEST_SUPPORT_H_
#define KINDLING_TESTS_BACKEND_CUDA_GPU_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/gpu_requirement.h"

#define KINDLING_NEED_CUDA_DEVICES(n)                                        \
  do {                                                                       \
    const ::kindling::cuda::GpuCheck kindling_gpu_check =                    \
        ::kindling::cuda::CheckCudaDevices(n);                               \
    if (kindling_gpu_check.verdict == ::kindling::cuda::GpuVerdict::kFail) { \
      GTEST_FAIL() << kindling_gpu_check.message;                            \
    }                                                                        \
    if (kindling_gpu_check.verdict == ::kindling::cuda::GpuVerdict::kSkip) { \
      GTEST_SKIP() << kindling_gpu_check.message;                            \
    }                                                                        \
  } while (false)

#endif  // KINDLING_TESTS_BACKEND_CUDA_GPU_TEST_SUPPORT_H_
