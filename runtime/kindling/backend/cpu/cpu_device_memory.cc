#include "kindling/backend/cpu/cpu_device_memory.h"

#include <cstring>

#include "kindling/backend/cpu/cpu_allocator.h"

namespace kindling::cpu {
namespace {

// CopyBytes() is memcpy that accepts empty ranges with null pointers (which
// memcpy itself does not allow).
void CopyBytes(void* dst, const void* src, size_t nbytes) {
  if (nbytes > 0) std::memcpy(dst, src, nbytes);
}

}  // namespace

void* CpuDeviceMemory::Allocate(const Device& device, size_t nbytes) {
  return TheCpuAllocator().Allocate(nbytes);
}

void CpuDeviceMemory::Deallocate(const Device& device, void* data,
                                 size_t nbytes) {
  TheCpuAllocator().Deallocate(data, nbytes);
}

void CpuDeviceMemory::CopyHostToDevice(const Device& device, void* device_dst,
                                       const void* host_src, size_t nbytes) {
  CopyBytes(device_dst, host_src, nbytes);
}

void CpuDeviceMemory::CopyDeviceToHost(const Device& device, void* host_dst,
                                       const void* device_src, size_t nbytes) {
  CopyBytes(host_dst, device_src, nbytes);
}

void CpuDeviceMemory::CopyDeviceToDevice(const Device& device, void* dst,
                                         const void* src, size_t nbytes) {
  CopyBytes(dst, src, nbytes);
}

}  // namespace kindling::cpu
