// DeviceApi: the few device operations a caching allocator needs.
//
// The caching allocator (cuda_allocator.h) decides which block serves which
// request, when a freed block may be reused by which stream, and when to
// give memory back; those decisions are plain bookkeeping, and getting them
// wrong corrupts memory silently on a GPU. Keeping the device behind this
// small interface lets a fake device (tests/backend/cuda) test all of them
// on a CPU, while the CUDA implementation (cuda_device_memory.cc) maps each
// method to one CUDA runtime call.
//
// Streams and events are opaque handles (a cudaStream_t / cudaEvent_t on a
// real device), so this header needs no CUDA headers and builds everywhere.
#ifndef KINDLING_BACKEND_CUDA_DEVICE_API_H_
#define KINDLING_BACKEND_CUDA_DEVICE_API_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace kindling::cuda {

class DeviceApi {
 public:
  using Stream = void*;
  using Event = void*;

  virtual ~DeviceApi() = default;

  // Malloc() returns `nbytes` of device memory; ResourceExhausted when the
  // device has not that much free, another error for anything else. Slow,
  // and may synchronize the device: the allocator calls it only on a cache
  // miss.
  [[nodiscard]] virtual absl::StatusOr<void*> Malloc(size_t nbytes) = 0;
  // Free() returns a Malloc() block. It synchronizes the device (cudaFree
  // does), so the allocator calls it only when emptying its cache.
  virtual void Free(void* data) = 0;

  // CreateEvent() returns a new event; the allocator pools its events and
  // never destroys them.
  virtual Event CreateEvent() = 0;
  // RecordEvent() marks the point on `stream` after all work queued so far.
  virtual void RecordEvent(Event event, Stream stream) = 0;
  // EventCompleted() is true once the work before the event's last record
  // has finished (never blocks).
  virtual bool EventCompleted(Event event) = 0;
  // StreamWaitEvent() makes work queued later on `stream` wait for the
  // event's last record, on the device, without blocking the host.
  virtual void StreamWaitEvent(Stream stream, Event event) = 0;
  // Synchronize() blocks until all work queued on the device has finished.
  virtual void Synchronize() = 0;
};

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_DEVICE_API_H_
