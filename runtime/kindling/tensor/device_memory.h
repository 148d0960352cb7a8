// DeviceMemory: the raw memory half of a device type, and its registry.
//
// A device type provides two things: memory (allocate, free, copy bytes) and
// kernels (backend.h). They are separate interfaces because they sit at
// different layers: Storage owns memory and needs only this interface, while
// the kernel table takes TensorBase, which is built on Storage. Keeping them
// apart lets storage, tensor_base and backend be separate libraries without a
// dependency cycle.
//
// The CPU backend registers its DeviceMemory when
// //runtime/kindling/backend/cpu is linked (alwayslink); a CUDA backend will
// register for DeviceKind::kCuda the same way. Using a device whose memory is
// not registered aborts with a message saying which target to add.
//
// Contract, for every method: pointers into device memory come from
// Allocate() on the same device; ranges are `nbytes` long and do not overlap;
// nbytes may be 0.
//
// Ordering. A device may run copies asynchronously, in order with its
// kernels (CUDA: on the calling thread's current stream of that device).
// What the host sees is synchronous: CopyHostToDevice() returns once the host
// bytes have been read (they may be reused at once), CopyDeviceToHost() once
// the host bytes are written. Device-to-device and peer copies may still be
// running on return; later kernels and copies on the device are ordered
// after them. Synchronize() waits for everything queued on a device and is
// where asynchronous device errors surface as a Status.
#ifndef KINDLING_TENSOR_DEVICE_MEMORY_H_
#define KINDLING_TENSOR_DEVICE_MEMORY_H_

#include <cstddef>

#include "absl/status/status.h"
#include "kindling/tensor/device.h"

namespace kindling {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;

  // Allocate() returns at least `nbytes` bytes aligned to 64; never null for
  // nbytes > 0 (out of memory aborts). Deallocate() gets the same size back.
  virtual void* Allocate(const Device& device, size_t nbytes) = 0;
  virtual void Deallocate(const Device& device, void* data, size_t nbytes) = 0;

  // CopyHostToDevice(): device_dst <- nbytes at host_src.
  virtual void CopyHostToDevice(const Device& device, void* device_dst,
                                const void* host_src, size_t nbytes) = 0;
  // CopyDeviceToHost(): host_dst <- nbytes at device_src.
  virtual void CopyDeviceToHost(const Device& device, void* host_dst,
                                const void* device_src, size_t nbytes) = 0;
  // CopyDeviceToDevice(): dst <- nbytes at src, both on `device`.
  virtual void CopyDeviceToDevice(const Device& device, void* dst,
                                  const void* src, size_t nbytes) = 0;

  // CopyPeer(): dst on `dst_device` <- nbytes at src on `src_device`, two
  // devices of this type (cuda:0 -> cuda:1). The default stages through host
  // memory; a device with direct peer copies overrides it.
  virtual void CopyPeer(const Device& dst_device, void* dst,
                        const Device& src_device, const void* src,
                        size_t nbytes);

  // Synchronize() waits until all work queued on `device` has finished, and
  // returns the error of any that failed (naming the failing call). Devices
  // that run everything synchronously (the CPU) return OK.
  [[nodiscard]] virtual absl::Status Synchronize(const Device& device) {
    return absl::OkStatus();
  }
};

// CopyBetweenDevices() copies nbytes from `src` on `src_device` to `dst` on
// `dst_device`, for any two devices: host <-> device, within a device, or
// between two devices of a type (peer). No bytes are staged on the way
// except by the device itself (a CUDA device stages host copies through
// pinned buffers). Ordering as for the DeviceMemory methods it calls.
void CopyBetweenDevices(const Device& dst_device, void* dst,
                        const Device& src_device, const void* src,
                        size_t nbytes);

// RegisterDeviceMemory() makes `memory` serve every device of `type`. Called
// from a backend library's static initializer; `memory` must live forever. A
// second registration for the same type replaces the first.
void RegisterDeviceMemory(DeviceKind type, DeviceMemory* memory);

// HasDeviceMemory() is true when a DeviceMemory serves `type`.
bool HasDeviceMemory(DeviceKind type);

// GetDeviceMemory() is the DeviceMemory serving `device`; aborts, naming the
// target to link, when none is registered.
DeviceMemory& GetDeviceMemory(const Device& device);

}  // namespace kindling

#endif  // KINDLING_TENSOR_DEVICE_MEMORY_H_
