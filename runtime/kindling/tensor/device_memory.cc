#include "kindling/tensor/device_memory.h"

#include <array>
#include <atomic>

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

}  // namespace kindling
