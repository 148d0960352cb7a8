#include "kindling/backend/cuda/cuda_context.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "tests/backend/cuda/gpu_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::cuda {
namespace {

TEST(CudaStatus, SuccessIsOk) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "cudaMalloc").ok());
}

TEST(CudaStatus, OutOfMemoryIsResourceExhaustedNamingTheCall) {
  const absl::Status status =
      CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(&ptr, 1 << 40)");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("cudaMalloc(&ptr, 1 << 40) failed"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("cudaErrorMemoryAllocation"),
            std::string::npos)
      << status;
}

TEST(CudaStatus, NamesTheLastKernelLaunchedOnThisThread) {
  internal::NoteKernelLaunch("SomeKernel");
  const absl::Status status =
      CudaStatus(cudaErrorIllegalAddress, "cudaDeviceSynchronize");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("SomeKernel"), std::string::npos) << status;
}

TEST(CudaStatus, ListsTheRecentLaunchesOldestFirst) {
  for (int i = 0; i < internal::kRecentLaunches + 2; ++i) {
    internal::NoteKernelLaunch(i % 2 == 0 ? "EvenKernel" : "OddKernel");
  }
  internal::NoteKernelLaunch("NewestKernel");
  EXPECT_STREQ(internal::LastKernelLaunch(), "NewestKernel");
  const std::string recent = internal::RecentKernelLaunches();
  // kRecentLaunches names: the newest last, the oldest ones dropped.
  EXPECT_EQ(std::count(recent.begin(), recent.end(), ','),
            internal::kRecentLaunches - 1)
      << recent;
  EXPECT_TRUE(recent.ends_with("OddKernel, NewestKernel")) << recent;
  const absl::Status status =
      CudaStatus(cudaErrorIllegalAddress, "cudaStreamSynchronize");
  EXPECT_NE(status.message().find(recent), std::string::npos) << status;
}

TEST(CudaStatus, ALaunchOnAnotherThreadIsNotListed) {
  internal::NoteKernelLaunch("MainThreadKernel");
  std::thread([] {
    EXPECT_STREQ(internal::LastKernelLaunch(), "none");
    EXPECT_EQ(internal::RecentKernelLaunches(), "none");
  }).join();
}

TEST(CudaAvailability, AgreesWithTheDeviceCountAndSaysWhy) {
  const absl::Status& availability = CudaAvailability();
  if (availability.ok()) {
    EXPECT_GT(CudaDeviceCount(), 0);
    return;
  }
  EXPECT_EQ(CudaDeviceCount(), 0);
  const std::string message(availability.message());
  if (absl::IsNotFound(availability)) {
    EXPECT_TRUE(message.starts_with("no CUDA device visible: ")) << message;
  } else {
    EXPECT_EQ(availability.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(message.starts_with("CUDA failed to initialize: ")) << message;
  }
}

TEST(CudaStatus, NoDeviceIsFailedPrecondition) {
  EXPECT_EQ(CudaStatus(cudaErrorNoDevice, "cudaGetDeviceCount").code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CublasStatus, AllocFailedIsResourceExhausted) {
  const absl::Status status =
      CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("CUBLAS_STATUS_ALLOC_FAILED"),
            std::string::npos)
      << status;
}

TEST(CudaCheckDeathTest, AbortsNamingTheCallAndError) {
  EXPECT_DEATH(KINDLING_CUDA_CHECK(cudaErrorInvalidValue),
               "cudaErrorInvalidValue failed: cudaErrorInvalidValue");
}

TEST(CudaDeviceCount, NeverAbortsAndIsStable) {
  const int count = CudaDeviceCount();
  EXPECT_GE(count, 0);
  EXPECT_EQ(CudaDeviceCount(), count);
}

TEST(CudaContextDeathTest, OutOfRangeDeviceAbortsNamingIt) {
  const int count = CudaDeviceCount();
  EXPECT_DEATH(CheckCudaDeviceIndex(count), "does not exist");
}

TEST(CudaDeviceGuard, SetsAndRestoresTheCurrentDevice) {
  KINDLING_NEED_CUDA_DEVICES(1);
  const int last = CudaDeviceCount() - 1;
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  {
    CudaDeviceGuard guard(last);
    int inside = -1;
    ASSERT_EQ(cudaGetDevice(&inside), cudaSuccess);
    EXPECT_EQ(inside, last);
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
}

TEST(CurrentCudaStream, DefaultIsOneNonBlockingStreamSharedByThreads) {
  KINDLING_NEED_CUDA_DEVICES(1);
  const cudaStream_t main_stream = CurrentCudaStream(0);
  ASSERT_NE(main_stream, nullptr);
  unsigned flags = 0;
  ASSERT_EQ(cudaStreamGetFlags(main_stream, &flags), cudaSuccess);
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
  cudaStream_t other_thread_stream = nullptr;
  std::thread([&] { other_thread_stream = CurrentCudaStream(0); }).join();
  EXPECT_EQ(other_thread_stream, main_stream);
}

TEST(CudaStreamGuard, IsPerThreadAndRestores) {
  KINDLING_NEED_CUDA_DEVICES(1);
  CudaDeviceGuard device(0);
  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking),
            cudaSuccess);
  {
    CudaStreamGuard guard(0, mine);
    EXPECT_EQ(CurrentCudaStream(0), mine);
    cudaStream_t seen_elsewhere = nullptr;
    std::thread([&] { seen_elsewhere = CurrentCudaStream(0); }).join();
    EXPECT_EQ(seen_elsewhere, DefaultCudaStream(0));
  }
  EXPECT_EQ(CurrentCudaStream(0), DefaultCudaStream(0));
  ASSERT_EQ(cudaStreamDestroy(mine), cudaSuccess);
}

TEST(CublasHandle, IsBoundToTheCurrentStream) {
  KINDLING_NEED_CUDA_DEVICES(1);
  CudaDeviceGuard device(0);
  cudaStream_t mine = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking),
            cudaSuccess);
  cudaStream_t bound = nullptr;
  {
    CudaStreamGuard guard(0, mine);
    ASSERT_EQ(cublasGetStream(CublasHandle(0), &bound), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(bound, mine);
  }
  ASSERT_EQ(cublasGetStream(CublasHandle(0), &bound), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(bound, DefaultCudaStream(0));
  ASSERT_EQ(cudaStreamDestroy(mine), cudaSuccess);
}

TEST(CudaKernels, RunInOrderOnTheCurrentStream) {
  KINDLING_NEED_CUDA_DEVICES(1);
  CudaDeviceGuard device(0);
  constexpr int64_t kCount = 1 << 20;
  float* data = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), kCount * sizeof(float)),
            cudaSuccess);
  const cudaStream_t stream = CurrentCudaStream(0);
  testing::LaunchIota(data, kCount, 5.0f, stream);
  testing::LaunchAddOne(data, kCount, stream);
  std::vector<float> host(kCount);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), data, kCount * sizeof(float),
                            cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  ASSERT_TRUE(SynchronizeCudaDevice(0).ok());
  EXPECT_EQ(host[0], 6.0f);
  EXPECT_EQ(host[kCount - 1], 6.0f + (kCount - 1));
  ASSERT_EQ(cudaFree(data), cudaSuccess);
}

}  // namespace
}  // namespace kindling::cuda
