#include "kindling/tensor/backend.h"

#include <array>
#include <atomic>

#include "kindling/core/check.h"

namespace kindling {
namespace {

std::array<std::atomic<Backend*>, kNumDeviceKinds>& Registry() {
  static std::array<std::atomic<Backend*>, kNumDeviceKinds> registry{};
  return registry;
}

}  // namespace

void RegisterBackend(DeviceKind type, Backend* backend) {
  Registry()[static_cast<int>(type)].store(backend, std::memory_order_release);
}

bool HasBackend(DeviceKind type) {
  return Registry()[static_cast<int>(type)].load(std::memory_order_acquire) !=
         nullptr;
}

Backend& GetBackend(const Device& device) {
  Backend* backend = Registry()[static_cast<int>(device.type())].load(
      std::memory_order_acquire);
  KINDLING_CHECK(backend != nullptr,
                 "no backend registered for device %s (link %s)",
                 device.ToString(), internal::BackendTarget(device.type()));
  return *backend;
}

}  // namespace kindling
