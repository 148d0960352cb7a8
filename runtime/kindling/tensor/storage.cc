#include "kindling/tensor/storage.h"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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

std::shared_ptr<Storage> Storage::FindLayoutCopy(std::string_view name) const {
  std::lock_guard<std::mutex> lock(layout_copy_mutex_);
  if (layout_copy_.copy == nullptr) return nullptr;
  if (layout_copy_.version != version()) {
    WriteLocked();
    layout_copy_ = LayoutCopy{};  // stale: release its memory now
    return nullptr;
  }
  return layout_copy_.name == name ? layout_copy_.copy : nullptr;
}

void Storage::KeepLayoutCopy(std::string name,
                             std::shared_ptr<Storage> copy) const {
  std::lock_guard<std::mutex> lock(layout_copy_mutex_);
  WriteLocked();  // the copy it replaces may hold the only values
  layout_copy_ = LayoutCopy{std::move(name), version(), std::move(copy), {}};
}

void Storage::KeepLayoutCopyOnly(std::string name,
                                 std::shared_ptr<Storage> copy,
                                 Unpack unpack) const {
  std::lock_guard<std::mutex> lock(layout_copy_mutex_);
  WriteLocked();
  layout_copy_ = LayoutCopy{std::move(name), version(), std::move(copy),
                            std::move(unpack)};
  unwritten_.store(true, std::memory_order_release);
}

void Storage::WriteFromLayoutCopy() const {
  std::lock_guard<std::mutex> lock(layout_copy_mutex_);
  WriteLocked();
}

void Storage::WriteLocked() const {
  if (!unwritten_.load(std::memory_order_relaxed)) return;
  // Whatever the version: an in-place writer bumps it before it asks for
  // the bytes, which still have to hold the values it overwrites.
  layout_copy_.unpack(layout_copy_.copy->data(), data_);
  layout_copy_.unpack = nullptr;
  unwritten_.store(false, std::memory_order_release);
}

Storage::~Storage() {
  if (borrowed_) return;  // owner_ releases the foreign memory
  if (data_ != nullptr) {
    GetDeviceMemory(device_).Deallocate(device_, data_, nbytes_);
  }
  internal::RecordDeallocation(device_, static_cast<int64_t>(nbytes_));
}

}  // namespace kindling
