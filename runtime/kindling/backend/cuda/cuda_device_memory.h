// CudaDeviceMemory: the DeviceMemory for DeviceKind::kCuda, and the
// DeviceApi its caching allocators use.
//
// Memory comes from one CudaAllocator per device (cuda_allocator.h) over
// CudaDeviceApi, on the calling thread's current stream; every copy is
// enqueued on the current stream of the device it writes to, and records
// that stream's use of its device blocks (CudaAllocator::RecordStream), so
// a block copied on a stream other than its own is not reused, once freed,
// before the copy has run:
//   * device to device: cudaMemcpyAsync;
//   * between devices (peer): cudaMemcpyPeerAsync on the destination's
//     stream, which first waits (on the device) for the source's stream, and
//     which the source's stream then waits for, so the source block is not
//     reused before the copy has read it;
//   * host to device / device to host: through pinned staging buffers
//     (pinned_staging.h), or directly when the host memory is already
//     pinned.
// Out of memory aborts naming the request and the allocator's bytes (a
// Storage cannot return a Status). Synchronize() waits for the whole device
// and returns asynchronous errors as a Status.
//
// Linking //runtime/kindling/backend/cuda:cuda_runtime registers it for
// kCuda (a static initializer that makes no CUDA call).
#ifndef KINDLING_BACKEND_CUDA_CUDA_DEVICE_MEMORY_H_
#define KINDLING_BACKEND_CUDA_CUDA_DEVICE_MEMORY_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/backend/cuda/cuda_allocator.h"
#include "kindling/backend/cuda/device_api.h"
#include "kindling/tensor/device_memory.h"

namespace kindling::cuda {

// CudaDeviceApi is DeviceApi for device `index`: each method sets the device
// and makes one CUDA call. Failures other than out of memory abort naming
// the call (the allocator has no way to continue after them).
class CudaDeviceApi final : public DeviceApi {
 public:
  explicit CudaDeviceApi(int index) : index_(index) {}

  absl::StatusOr<void*> Malloc(size_t nbytes) override;
  void Free(void* data) override;
  Event CreateEvent() override;
  void RecordEvent(Event event, Stream stream) override;
  bool EventCompleted(Event event) override;
  void StreamWaitEvent(Stream stream, Event event) override;
  void Synchronize() override;

 private:
  const int index_;
};

// CudaAllocatorFor() is the process-wide caching allocator of device
// `index` (created on first use, never destroyed); it reports its cache to
// GetMemoryStats(Device::Cuda(index)).
CudaAllocator& CudaAllocatorFor(int index);

class CudaDeviceMemory final : public DeviceMemory {
 public:
  void* Allocate(const Device& device, size_t nbytes) override;
  void Deallocate(const Device& device, void* data, size_t nbytes) override;
  void CopyHostToDevice(const Device& device, void* device_dst,
                        const void* host_src, size_t nbytes) override;
  void CopyDeviceToHost(const Device& device, void* host_dst,
                        const void* device_src, size_t nbytes) override;
  void CopyDeviceToDevice(const Device& device, void* dst, const void* src,
                          size_t nbytes) override;
  void CopyPeer(const Device& dst_device, void* dst, const Device& src_device,
                const void* src, size_t nbytes) override;
  [[nodiscard]] absl::Status Synchronize(const Device& device) override;
};

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_CUDA_DEVICE_MEMORY_H_
