#include "kindling/backend/cuda/cuda_device_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/pinned_staging.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/device_memory.h"
#include "tests/backend/cuda/gpu_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::cuda {
namespace {

TEST(CudaDeviceMemory, IsRegisteredForCudaByLinkingTheRuntime) {
  EXPECT_TRUE(HasDeviceMemory(DeviceKind::kCuda));
}

// More than two staging chunks and not a multiple of one, so the pipelined
// loop runs its alternation and its short last chunk.
constexpr size_t kCount = (PinnedStagingPool::kChunkBytes * 5 / 2) / 4 + 3;

std::vector<int32_t> Iota() {
  std::vector<int32_t> values(kCount);
  std::iota(values.begin(), values.end(), -17);
  return values;
}

TEST(CudaDeviceMemory, HostToDeviceToDeviceToHostRoundTrips) {
  KINDLING_NEED_CUDA_DEVICES(1);
  const Device cuda = Device::Cuda(0);
  const size_t nbytes = kCount * sizeof(int32_t);
  DeviceMemory& memory = GetDeviceMemory(cuda);
  void* a = memory.Allocate(cuda, nbytes);
  void* b = memory.Allocate(cuda, nbytes);
  const std::vector<int32_t> values = Iota();
  CopyBetweenDevices(cuda, a, Device::Cpu(), values.data(), nbytes);
  CopyBetweenDevices(cuda, b, cuda, a, nbytes);
  std::vector<int32_t> back(kCount, 0);
  CopyBetweenDevices(Device::Cpu(), back.data(), cuda, b, nbytes);
  EXPECT_EQ(back, values);
  EXPECT_TRUE(memory.Synchronize(cuda).ok());
  memory.Deallocate(cuda, a, nbytes);
  memory.Deallocate(cuda, b, nbytes);
}

TEST(CudaDeviceMemory, FreedBlockIsCachedAndReused) {
  KINDLING_NEED_CUDA_DEVICES(1);
  const Device cuda = Device::Cuda(0);
  DeviceMemory& memory = GetDeviceMemory(cuda);
  void* first = memory.Allocate(cuda, 3 << 20);
  memory.Deallocate(cuda, first, 3 << 20);
  const int64_t mallocs = CudaAllocatorFor(0).stats().device_mallocs;
  void* second = memory.Allocate(cuda, 3 << 20);
  EXPECT_EQ(second, first);
  EXPECT_EQ(CudaAllocatorFor(0).stats().device_mallocs, mallocs);
  memory.Deallocate(cuda, second, 3 << 20);
}

// A block read on a second stream is freed on the host while the read is
// still queued: the next same-size block on the block's own stream, written
// at once, must not be that block, or the read would see the new values.
TEST(CudaDeviceMemory, BlockReadOnASecondStreamIsNotReusedBeforeTheRead) {
  KINDLING_NEED_CUDA_DEVICES(1);
  const Device cuda = Device::Cuda(0);
  DeviceMemory& memory = GetDeviceMemory(cuda);
  constexpr int64_t kFloats = int64_t{1} << 20;
  constexpr size_t kBytes = kFloats * sizeof(float);
  CudaDeviceGuard device(0);
  const cudaStream_t default_stream = DefaultCudaStream(0);
  // Both on this thread's current stream, the default one.
  void* source = memory.Allocate(cuda, kBytes);
  void* copy = memory.Allocate(cuda, kBytes);
  testing::LaunchIota(static_cast<float*>(source), kFloats, 1.0f,
                      default_stream);
  // The side stream reads what the default stream wrote.
  ASSERT_EQ(cudaStreamSynchronize(default_stream), cudaSuccess);
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
            cudaSuccess);
  {
    CudaStreamGuard guard(0, side);
    // The copy starts reading only after 200 ms.
    testing::LaunchSpin(200'000'000, side);
    memory.CopyDeviceToDevice(cuda, copy, source, kBytes);
  }
  const size_t pending = CudaAllocatorFor(0).stats().pending_blocks;
  memory.Deallocate(cuda, source, kBytes);
  EXPECT_EQ(CudaAllocatorFor(0).stats().pending_blocks, pending + 1);
  void* next = memory.Allocate(cuda, kBytes);
  testing::LaunchIota(static_cast<float*>(next), kFloats, -1e6f,
                      default_stream);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  std::vector<float> back(kFloats, 0.0f);
  CopyBetweenDevices(Device::Cpu(), back.data(), cuda, copy, kBytes);
  std::vector<float> expected(kFloats);
  for (int64_t i = 0; i < kFloats; ++i) {
    expected[i] = 1.0f + static_cast<float>(i);
  }
  EXPECT_EQ(back, expected);
  memory.Deallocate(cuda, next, kBytes);
  // Freed before its stream is destroyed: the free records an event there.
  memory.Deallocate(cuda, copy, kBytes);
  EXPECT_TRUE(memory.Synchronize(cuda).ok());
  ASSERT_EQ(cudaStreamDestroy(side), cudaSuccess);
}

TEST(CudaDeviceMemory, PeerCopyBetweenTwoDevices) {
  KINDLING_NEED_CUDA_DEVICES(2);
  const size_t nbytes = kCount * sizeof(int32_t);
  const Device zero = Device::Cuda(0);
  const Device one = Device::Cuda(1);
  void* on_zero = GetDeviceMemory(zero).Allocate(zero, nbytes);
  void* on_one = GetDeviceMemory(one).Allocate(one, nbytes);
  const std::vector<int32_t> values = Iota();
  CopyBetweenDevices(zero, on_zero, Device::Cpu(), values.data(), nbytes);
  CopyBetweenDevices(one, on_one, zero, on_zero, nbytes);
  std::vector<int32_t> back(kCount, 0);
  CopyBetweenDevices(Device::Cpu(), back.data(), one, on_one, nbytes);
  EXPECT_EQ(back, values);
  GetDeviceMemory(zero).Deallocate(zero, on_zero, nbytes);
  GetDeviceMemory(one).Deallocate(one, on_one, nbytes);
}

}  // namespace
}  // namespace kindling::cuda
