#include "kindling/tensor/storage.h"

#include <memory>
#include <utility>

#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling {

std::shared_ptr<Storage> Storage::Allocate(const Device& device,
                                           size_t nbytes) {
  void* data =
      nbytes == 0 ? nullptr : GetDeviceMemory(device).Allocate(device, nbytes);
  internal::RecordAllocation(device, static_cast<int64_t>(nbytes));
  return std::shared_ptr<Storage>(new Storage(device, data, nbytes,
                                              /*borrowed=*/false, nullptr,
                                              /*read_only=*/false));
}

std::shared_ptr<Storage> Storage::Borrow(const Device& device, void* data,
                                         size_t nbytes,
                                         std::shared_ptr<const void> owner,
                                         bool read_only) {
  return std::shared_ptr<Storage>(new Storage(
      device, data, nbytes, /*borrowed=*/true, std::move(owner), read_only));
}

Storage::Storage(const Device& device, void* data, size_t nbytes, bool borrowed,
                 std::shared_ptr<const void> owner, bool read_only)
    : device_(device),
      data_(data),
      nbytes_(nbytes),
      borrowed_(borrowed),
      owner_(std::move(owner)),
      read_only_(read_only) {}

Storage::~Storage() {
  if (borrowed_) return;  // owner_ releases the foreign memory
  if (data_ != nullptr) {
    GetDeviceMemory(device_).Deallocate(device_, data_, nbytes_);
  }
  internal::RecordDeallocation(device_, static_cast<int64_t>(nbytes_));
}

}  // namespace kindling
