// PinnedStagingPool: page-locked host buffers for host <-> device copies.
//
// The GPU's DMA engines read and write only page-locked (pinned) host
// memory; a copy from ordinary pageable memory is staged by the driver
// through its own small buffer, synchronously. Kindling stages through its
// own pinned buffers instead, in chunks of kChunkBytes, two at a time: while
// one chunk is copied to the device, the host fills the next one. So a
// host-to-device copy needs no synchronization at all (it returns once the
// host bytes are in pinned memory) and host memory in flight stays at two
// chunks however large the tensor (checkpoint loading relies on that).
//
// Buffers are per device (each carries an event of that device marking when
// its last copy finished), allocated with cudaHostAlloc on first use and
// never freed. A pool hands out a free buffer, or makes a new one when all
// are in use (by other threads), so it grows to twice the number of threads
// copying at once.
//
// Thread safety: Acquire() and Release() may be called from any thread.
#ifndef KINDLING_BACKEND_CUDA_PINNED_STAGING_H_
#define KINDLING_BACKEND_CUDA_PINNED_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace kindling::cuda {

class PinnedStagingPool {
 public:
  static constexpr size_t kChunkBytes = size_t{4} << 20;

  struct Buffer {
    void* data = nullptr;  // kChunkBytes of pinned host memory
    // Recorded after the last copy that used `data`; wait on it before
    // touching `data` again.
    cudaEvent_t done = nullptr;
  };

  // ForDevice() is the pool of device `index`, created on first use.
  static PinnedStagingPool& ForDevice(int index);

  // Acquire() returns a buffer whose previous copy has finished.
  Buffer Acquire();
  // Release() gives `buffer` back; its `done` event must have been recorded
  // after its last use.
  void Release(const Buffer& buffer);

 private:
  explicit PinnedStagingPool(int index) : index_(index) {}

  const int index_;
  std::mutex mutex_;
  std::vector<Buffer> free_;
};

// CopyHostToDeviceStaged() copies nbytes from pageable `host_src` to
// `device_dst` on device `index`, enqueued on `stream`, through pinned
// buffers; returns once `host_src` has been read.
void CopyHostToDeviceStaged(int index, void* device_dst, const void* host_src,
                            size_t nbytes, cudaStream_t stream);

// CopyDeviceToHostStaged() copies nbytes from `device_src` to pageable
// `host_dst`, after the work queued on `stream`; returns once `host_dst` is
// written.
void CopyDeviceToHostStaged(int index, void* host_dst, const void* device_src,
                            size_t nbytes, cudaStream_t stream);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_PINNED_STAGING_H_
