// CpuDeviceMemory: the DeviceMemory for DeviceKind::kCpu.
//
// CPU memory is host memory, so every copy is a memcpy; allocation goes
// through TheCpuAllocator() (64-byte aligned, large blocks cached). It is
// registered together with CpuBackend by RegisterCpuBackend()
// (cpu_backend.h) when //runtime/kindling/backend/cpu is linked.
#ifndef KINDLING_BACKEND_CPU_CPU_DEVICE_MEMORY_H_
#define KINDLING_BACKEND_CPU_CPU_DEVICE_MEMORY_H_

#include <cstddef>

#include "kindling/tensor/device_memory.h"

namespace kindling::cpu {

class CpuDeviceMemory final : public DeviceMemory {
 public:
  void* Allocate(const Device& device, size_t nbytes) override;
  void Deallocate(const Device& device, void* data, size_t nbytes) override;
  void CopyHostToDevice(const Device& device, void* device_dst,
                        const void* host_src, size_t nbytes) override;
  void CopyDeviceToHost(const Device& device, void* host_dst,
                        const void* device_src, size_t nbytes) override;
  void CopyDeviceToDevice(const Device& device, void* dst, const void* src,
                          size_t nbytes) override;
};

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_CPU_DEVICE_MEMORY_H_
