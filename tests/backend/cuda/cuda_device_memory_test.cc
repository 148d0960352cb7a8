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
