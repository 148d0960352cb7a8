#include "kindling/tensor/device_memory.h"

#include <array>
#include <atomic>
#include <memory>

#include "kindling/core/check.h"

namespace kindling {
namespace {

std::array<std::atomic<DeviceMemory*>, kNumDeviceKinds>& Registry() {
  static std::array<std::atomic<DeviceMemory*>, kNumDeviceKinds> registry{};
  return registry;
}

}  // namespace

void RegisterDeviceMemory(DeviceKind type, DeviceMemory* memory) {
  Registry()[static_cast<int>(type)].store(memory, std::memory_order_release);
}

bool HasDeviceMemory(DeviceKind type) {
  return Registry()[static_cast<int>(type)].load(std::memory_order_acquire) !=
         nullptr;
}

DeviceMemory& GetDeviceMemory(const Device& device) {
  DeviceMemory* memory = Registry()[static_cast<int>(device.type())].load(
      std::memory_order_acquire);
  KINDLING_CHECK(memory != nullptr,
                 "no device memory registered for device %s (link %s)",
                 device.ToString(), internal::BackendTarget(device.type()));
  return *memory;
}

void DeviceMemory::CopyPeer(const Device& dst_device, void* dst,
                            const Device& src_device, const void* src,
                            size_t nbytes) {
  if (nbytes == 0) return;
  // Uninitialized: every byte is overwritten by the first copy.
  std::unique_ptr<char[]> host(new char[nbytes]);
  CopyDeviceToHost(src_device, host.get(), src, nbytes);
  CopyHostToDevice(dst_device, dst, host.get(), nbytes);
}

void CopyBetweenDevices(const Device& dst_device, void* dst,
                        const Device& src_device, const void* src,
                        size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device == src_device) {
    GetDeviceMemory(dst_device)
        .CopyDeviceToDevice(dst_device, dst, src, nbytes);
  } else if (src_device.is_cpu()) {
    GetDeviceMemory(dst_device).CopyHostToDevice(dst_device, dst, src, nbytes);
  } else if (dst_device.is_cpu()) {
    GetDeviceMemory(src_device).CopyDeviceToHost(src_device, dst, src, nbytes);
  } else {
    KINDLING_CHECK(dst_device.type() == src_device.type(),
                   "copy between devices: no path from %s to %s",
                   src_device.ToString(), dst_device.ToString());
    GetDeviceMemory(dst_device)
        .CopyPeer(dst_device, dst, src_device, src, nbytes);
  }
}

}  // namespace kindling
