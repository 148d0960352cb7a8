// MappedFile: a whole file mapped copy-on-write into memory.
//
// Loading a checkpoint maps it instead of reading it: CPU tensors whose dtype
// matches the file borrow the mapped pages directly, so the model's bytes
// exist once, in the page cache, and are faulted in only when touched. The
// mapping is MAP_PRIVATE with PROT_READ | PROT_WRITE, and tensors borrow it
// as ordinary writable storage: an in-place write makes the kernel copy just
// the touched page into private memory, every handle on that storage sees the
// write (as for any other tensor), and the file on disk is never modified.
//
// Lifetime: the mapping lives as long as the shared_ptr returned by Open()
// and every tensor that borrowed from it (they hold the same owner).
//
// Replacing the file by rename (as SaveModule does) is safe while it is
// mapped: the old inode stays alive. Writing into the same file in place
// while it is mapped is not: the mapped bytes would change under the tensors,
// and truncating it makes reading the lost pages raise SIGBUS (as with any
// mmap-based loader, PyTorch's and safetensors' included).
#ifndef KINDLING_IO_MAPPED_FILE_H_
#define KINDLING_IO_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace kindling::io {

class MappedFile {
 public:
  // Open() maps `path`. NotFound / PermissionDenied / Internal name the path
  // and the system error. An empty file maps to an empty span.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(
      const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace kindling::io

#endif  // KINDLING_IO_MAPPED_FILE_H_
