#include "kindling/backend/cuda/pinned_staging.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/core/check.h"

namespace kindling::cuda {
namespace {

constexpr int kMaxDevices = 64;

char* At(void* base, size_t offset) {
  return static_cast<char*>(base) + offset;
}
const char* At(const void* base, size_t offset) {
  return static_cast<const char*>(base) + offset;
}

}  // namespace

PinnedStagingPool& PinnedStagingPool::ForDevice(int index) {
  CheckCudaDeviceIndex(index);
  static std::array<std::once_flag, kMaxDevices> created;
  static std::array<PinnedStagingPool*, kMaxDevices> pools{};
  std::call_once(created[index],
                 [index] { pools[index] = new PinnedStagingPool(index); });
  return *pools[index];
}

PinnedStagingPool::Buffer PinnedStagingPool::Acquire() {
  Buffer buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      buffer = free_.back();
      free_.pop_back();
    }
  }
  if (buffer.data == nullptr) {
    CudaDeviceGuard guard(index_);
    KINDLING_CUDA_CHECK(
        cudaHostAlloc(&buffer.data, kChunkBytes, cudaHostAllocPortable));
    KINDLING_CUDA_CHECK(
        cudaEventCreateWithFlags(&buffer.done, cudaEventDisableTiming));
    return buffer;
  }
  // The host must not overwrite bytes a queued copy still reads.
  KINDLING_CUDA_CHECK(cudaEventSynchronize(buffer.done));
  return buffer;
}

void PinnedStagingPool::Release(const Buffer& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

void CopyHostToDeviceStaged(int index, void* device_dst, const void* host_src,
                            size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return;
  PinnedStagingPool& pool = PinnedStagingPool::ForDevice(index);
  constexpr size_t kChunk = PinnedStagingPool::kChunkBytes;
  // Two buffers alternate: the host fills one while the other is copied.
  std::array<PinnedStagingPool::Buffer, 2> buffers = {pool.Acquire(),
                                                      pool.Acquire()};
  int which = 0;
  for (size_t offset = 0; offset < nbytes; offset += kChunk, which ^= 1) {
    const size_t chunk = std::min(kChunk, nbytes - offset);
    PinnedStagingPool::Buffer& buffer = buffers[which];
    KINDLING_CUDA_CHECK(cudaEventSynchronize(buffer.done));
    std::memcpy(buffer.data, At(host_src, offset), chunk);
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(At(device_dst, offset), buffer.data,
                                        chunk, cudaMemcpyHostToDevice, stream));
    KINDLING_CUDA_CHECK(cudaEventRecord(buffer.done, stream));
  }
  // No wait: a buffer's next user waits for its `done` event.
  for (const PinnedStagingPool::Buffer& buffer : buffers) pool.Release(buffer);
}

void CopyDeviceToHostStaged(int index, void* host_dst, const void* device_src,
                            size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return;
  PinnedStagingPool& pool = PinnedStagingPool::ForDevice(index);
  constexpr size_t kChunk = PinnedStagingPool::kChunkBytes;
  std::array<PinnedStagingPool::Buffer, 2> buffers = {pool.Acquire(),
                                                      pool.Acquire()};
  // Chunk k+1's copy is queued before the host unpacks chunk k.
  auto enqueue = [&](size_t offset, PinnedStagingPool::Buffer& buffer) {
    const size_t chunk = std::min(kChunk, nbytes - offset);
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(buffer.data, At(device_src, offset),
                                        chunk, cudaMemcpyDeviceToHost, stream));
    KINDLING_CUDA_CHECK(cudaEventRecord(buffer.done, stream));
  };
  int which = 0;
  enqueue(0, buffers[0]);
  for (size_t offset = 0; offset < nbytes; offset += kChunk, which ^= 1) {
    const size_t next = offset + kChunk;
    if (next < nbytes) enqueue(next, buffers[which ^ 1]);
    PinnedStagingPool::Buffer& buffer = buffers[which];
    KINDLING_CUDA_CHECK(cudaEventSynchronize(buffer.done));
    std::memcpy(At(host_dst, offset), buffer.data,
                std::min(kChunk, nbytes - offset));
  }
  for (const PinnedStagingPool::Buffer& buffer : buffers) pool.Release(buffer);
}

}  // namespace kindling::cuda
