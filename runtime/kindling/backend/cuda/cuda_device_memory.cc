#include "kindling/backend/cuda/cuda_device_memory.h"

#include <array>
#include <mutex>
#include <string>
#include <utility>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/pinned_staging.h"
#include "kindling/core/check.h"

namespace kindling::cuda {
namespace {

constexpr int kMaxDevices = 64;

cudaStream_t AsStream(DeviceApi::Stream stream) {
  return static_cast<cudaStream_t>(stream);
}
cudaEvent_t AsEvent(DeviceApi::Event event) {
  return static_cast<cudaEvent_t>(event);
}

// IsPinnedHost() is true for page-locked host memory, which the device can
// copy from and to directly.
bool IsPinnedHost(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer CUDA knows: pageable
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// Makes `waiter` wait, on the device, for the work queued on `signaler` so
// far. The event belongs to the signaler's device (it is recorded there).
void StreamWaitStream(int waiter_index, cudaStream_t waiter, int signaler_index,
                      cudaStream_t signaler) {
  cudaEvent_t event = nullptr;
  {
    CudaDeviceGuard guard(signaler_index);
    KINDLING_CUDA_CHECK(
        cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    KINDLING_CUDA_CHECK(cudaEventRecord(event, signaler));
  }
  CudaDeviceGuard guard(waiter_index);
  KINDLING_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  // Released by the runtime once the recorded work completes.
  KINDLING_CUDA_CHECK(cudaEventDestroy(event));
}

[[maybe_unused]] const bool registered = [] {
  static CudaDeviceMemory* memory = new CudaDeviceMemory;
  RegisterDeviceMemory(DeviceKind::kCuda, memory);
  return true;
}();

}  // namespace

absl::StatusOr<void*> CudaDeviceApi::Malloc(size_t nbytes) {
  CudaDeviceGuard guard(index_);
  void* data = nullptr;
  const cudaError_t error = cudaMalloc(&data, nbytes);
  if (error != cudaSuccess) {
    // Out of memory is not sticky, but cudaGetLastError would report it.
    (void)cudaGetLastError();
    return CudaStatus(error, "cudaMalloc");
  }
  return data;
}

void CudaDeviceApi::Free(void* data) {
  CudaDeviceGuard guard(index_);
  KINDLING_CUDA_CHECK(cudaFree(data));
}

DeviceApi::Event CudaDeviceApi::CreateEvent() {
  CudaDeviceGuard guard(index_);
  cudaEvent_t event = nullptr;
  KINDLING_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void CudaDeviceApi::RecordEvent(Event event, Stream stream) {
  CudaDeviceGuard guard(index_);
  KINDLING_CUDA_CHECK(cudaEventRecord(AsEvent(event), AsStream(stream)));
}

bool CudaDeviceApi::EventCompleted(Event event) {
  CudaDeviceGuard guard(index_);
  const cudaError_t error = cudaEventQuery(AsEvent(event));
  if (error == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error; don't leave it as the last
    return false;
  }
  KINDLING_CUDA_CHECK(error);
  return true;
}

void CudaDeviceApi::StreamWaitEvent(Stream stream, Event event) {
  CudaDeviceGuard guard(index_);
  KINDLING_CUDA_CHECK(cudaStreamWaitEvent(AsStream(stream), AsEvent(event), 0));
}

void CudaDeviceApi::Synchronize() {
  CudaDeviceGuard guard(index_);
  KINDLING_CUDA_CHECK(cudaDeviceSynchronize());
}

CudaAllocator& CudaAllocatorFor(int index) {
  CheckCudaDeviceIndex(index);
  static std::array<std::once_flag, kMaxDevices> created;
  static std::array<CudaAllocator*, kMaxDevices> allocators{};
  std::call_once(created[index], [index] {
    CudaAllocator::Options options;
    options.stats_device = Device::Cuda(index);
    options.device_name = Device::Cuda(index).ToString();
    allocators[index] =
        new CudaAllocator(new CudaDeviceApi(index), std::move(options));
  });
  return *allocators[index];
}

void* CudaDeviceMemory::Allocate(const Device& device, size_t nbytes) {
  const int index = device.index();
  absl::StatusOr<void*> data =
      CudaAllocatorFor(index).Allocate(nbytes, CurrentCudaStream(index));
  KINDLING_CHECK(data.ok(), "%s", data.status().ToString());
  return *data;
}

void CudaDeviceMemory::Deallocate(const Device& device, void* data,
                                  size_t nbytes) {
  CudaAllocatorFor(device.index()).Deallocate(data);
}

void CudaDeviceMemory::CopyHostToDevice(const Device& device, void* device_dst,
                                        const void* host_src, size_t nbytes) {
  if (nbytes == 0) return;
  const int index = device.index();
  CudaDeviceGuard guard(index);
  const cudaStream_t stream = CurrentCudaStream(index);
  // The staged copy returns before the device has written every chunk.
  CudaAllocatorFor(index).RecordStream(device_dst, stream);
  if (IsPinnedHost(host_src)) {
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, nbytes,
                                        cudaMemcpyHostToDevice, stream));
    // The caller may reuse its buffer on return: wait for the copy.
    KINDLING_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  CopyHostToDeviceStaged(index, device_dst, host_src, nbytes, stream);
}

void CudaDeviceMemory::CopyDeviceToHost(const Device& device, void* host_dst,
                                        const void* device_src, size_t nbytes) {
  if (nbytes == 0) return;
  const int index = device.index();
  CudaDeviceGuard guard(index);
  const cudaStream_t stream = CurrentCudaStream(index);
  // The host waits for the bytes, so this record is moot today; it keeps the
  // rule "every enqueue records its blocks" free of exceptions.
  CudaAllocatorFor(index).RecordStream(device_src, stream);
  if (IsPinnedHost(host_dst)) {
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, nbytes,
                                        cudaMemcpyDeviceToHost, stream));
    KINDLING_CUDA_CHECK(cudaStreamSynchronize(stream));
  } else {
    CopyDeviceToHostStaged(index, host_dst, device_src, nbytes, stream);
  }
  // The bytes may come from a gather that met a bad index: the host waited
  // for them, so this is where that fault surfaces.
  CheckNoCudaIndexFault(index);
}

void CudaDeviceMemory::CopyDeviceToDevice(const Device& device, void* dst,
                                          const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  const int index = device.index();
  CudaDeviceGuard guard(index);
  const cudaStream_t stream = CurrentCudaStream(index);
  CudaAllocator& allocator = CudaAllocatorFor(index);
  allocator.RecordStream(dst, stream);
  allocator.RecordStream(src, stream);
  KINDLING_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream));
}

void CudaDeviceMemory::CopyPeer(const Device& dst_device, void* dst,
                                const Device& src_device, const void* src,
                                size_t nbytes) {
  if (nbytes == 0) return;
  const int dst_index = dst_device.index();
  const int src_index = src_device.index();
  const cudaStream_t dst_stream = CurrentCudaStream(dst_index);
  const cudaStream_t src_stream = CurrentCudaStream(src_index);
  // The copy reads what the source's queued kernels write ...
  StreamWaitStream(dst_index, dst_stream, src_index, src_stream);
  {
    CudaDeviceGuard guard(dst_index);
    // Works with or without peer access enabled (the runtime stages through
    // the host when the devices cannot reach each other).
    KINDLING_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_index, src, src_index,
                                            nbytes, dst_stream));
  }
  // ... and the source block is not reused on its stream before it is read.
  StreamWaitStream(src_index, src_stream, dst_index, dst_stream);
  // Each block is used on its device's current stream (the source's through
  // that wait), which may not be the stream it was allocated on. An event
  // belongs to one device, so neither allocator could record the other
  // device's stream.
  CudaAllocatorFor(dst_index).RecordStream(dst, dst_stream);
  CudaAllocatorFor(src_index).RecordStream(src, src_stream);
}

absl::Status CudaDeviceMemory::Synchronize(const Device& device) {
  return SynchronizeCudaDevice(device.index());
}

}  // namespace kindling::cuda
