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
// Version. Every in-place write bumps the storage's version (through
// MakeWritable(), which every in-place writer calls first). Autodiff notes
// the version of each tensor it saves for backward and checks it before
// backward reads the tensor (saved_tensor.h), so a backward never silently
// reads values that were overwritten after the forward. The counter is per
// storage, so a write through any view counts for every view.
//
// Layout copy. A kernel that reads the bytes in another layout (a
// convolution reorders its NCHW input into oneDNN's blocked layout) may keep
// that copy with the storage, under a name of its own for the view and the
// layout, so that the next reader in that layout (the same convolution's
// backward) finds it instead of reordering again. A copy belongs to the
// version it was made at: after an in-place write it is never found again.
// A kernel whose output's next reader reads that layout (a convolution's
// input gradient in the blocked layout, for the layer before) may leave the
// bytes unwritten and keep only the copy: the first data() call writes them
// from it, so a reader that never asks for them never costs the pass.
//
// Thread safety: a Storage's metadata is immutable except the version, an
// atomic, and the layout copy, kept under a mutex; its bytes are written only
// by kernels, and concurrent writes to one storage are the caller's race.
#ifndef KINDLING_TENSOR_STORAGE_H_
#define KINDLING_TENSOR_STORAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

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

  // data() is the bytes' address; bytes left unwritten for a layout copy
  // (KeepLayoutCopyOnly()) are written first.
  void* data() const {
    if (unwritten_.load(std::memory_order_acquire)) [[unlikely]] {
      WriteFromLayoutCopy();
    }
    return data_;
  }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  // is_borrowed() is true for foreign memory.
  bool is_borrowed() const { return borrowed_; }
  // is_read_only() is true when writing the bytes is not allowed.
  bool is_read_only() const { return read_only_; }

  // version() counts the in-place writes to these bytes so far.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  // BumpVersion() records one in-place write; called by
  // TensorBase::MakeWritable(), before the write.
  void BumpVersion() { version_.fetch_add(1, std::memory_order_relaxed); }

  // FindLayoutCopy() is the layout copy kept under `name` at the current
  // version, or null.
  std::shared_ptr<Storage> FindLayoutCopy(std::string_view name) const;
  // KeepLayoutCopy() keeps `copy` as these bytes' values under `name` at the
  // current version, in place of any copy kept before (one a storage).
  void KeepLayoutCopy(std::string name, std::shared_ptr<Storage> copy) const;
  // KeepLayoutCopyOnly() keeps `copy` as KeepLayoutCopy() does and leaves
  // the bytes unwritten until the first data() call, which writes them by
  // unpack(copy's bytes, these bytes).
  using Unpack = std::function<void(const void* copy, void* bytes)>;
  void KeepLayoutCopyOnly(std::string name, std::shared_ptr<Storage> copy,
                          Unpack unpack) const;
  // is_written() is false while the bytes wait for KeepLayoutCopyOnly()'s
  // unpack.
  bool is_written() const {
    return !unwritten_.load(std::memory_order_acquire);
  }

 private:
  Storage(const Device& device, void* data, size_t nbytes, bool borrowed,
          std::shared_ptr<const void> owner, bool read_only);

  // WriteFromLayoutCopy() writes unwritten bytes from the layout copy;
  // WriteLocked() does with the mutex held.
  void WriteFromLayoutCopy() const;
  void WriteLocked() const;

  Device device_;
  void* data_;
  size_t nbytes_;
  bool borrowed_;
  std::shared_ptr<const void> owner_;
  bool read_only_;
  std::atomic<uint64_t> version_{0};

  struct LayoutCopy {
    std::string name;
    uint64_t version = 0;
    std::shared_ptr<Storage> copy;
    Unpack unpack;  // set while the bytes are unwritten
  };
  mutable std::mutex layout_copy_mutex_;
  mutable LayoutCopy layout_copy_;
  mutable std::atomic<bool> unwritten_{false};
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_STORAGE_H_
