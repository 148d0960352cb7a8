// Storage: one block of device memory that tensors view.
//
// Tensors never own memory directly: each holds a shared_ptr<Storage> plus
// its shape, strides and offset, so copying a tensor or taking a view costs a
// refcount increment. A Storage is either
//   * owned: allocated by the device's DeviceMemory, counted in MemoryStats,
//   freed
//     when the last tensor viewing it dies; or
//   * borrowed: foreign memory (say a memory-mapped checkpoint) kept alive by
//     an opaque owner handle. Borrowing copies nothing and counts nothing.
// Borrowed memory may be read-only. In-place writers call
// TensorBase::MakeWritable() first, which copies a read-only storage into an
// owned one (copy on write), so a tensor loaded from a read-only mapping can
// still be trained.
//
// Thread safety: a Storage's metadata is immutable; its bytes are written only
// by kernels, and concurrent writes to one storage are the caller's race.
#ifndef KINDLING_TENSOR_STORAGE_H_
#define KINDLING_TENSOR_STORAGE_H_

#include <cstddef>
#include <memory>

#include "kindling/tensor/device.h"

namespace kindling {

class Storage {
 public:
  // Allocate() returns `nbytes` of uninitialized memory on `device`, from the
  // DeviceMemory registered for it (aborting if there is none).
  static std::shared_ptr<Storage> Allocate(const Device& device, size_t nbytes);

  // Borrow() wraps foreign memory without copying it. `owner` keeps `data`
  // alive and is released when the storage dies; it may be null when the
  // caller guarantees the lifetime. The bytes are not counted in MemoryStats.
  static std::shared_ptr<Storage> Borrow(const Device& device, void* data,
                                         size_t nbytes,
                                         std::shared_ptr<const void> owner,
                                         bool read_only);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  // is_borrowed() is true for foreign memory.
  bool is_borrowed() const { return borrowed_; }
  // is_read_only() is true when writing the bytes is not allowed.
  bool is_read_only() const { return read_only_; }

 private:
  Storage(const Device& device, void* data, size_t nbytes, bool borrowed,
          std::shared_ptr<const void> owner, bool read_only);

  Device device_;
  void* data_;
  size_t nbytes_;
  bool borrowed_;
  std::shared_ptr<const void> owner_;
  bool read_only_;
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_STORAGE_H_
