#include "kindling/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kindling/io/strings.h"

namespace kindling::io {
namespace {

[[nodiscard]] absl::Status ErrnoError(int error, const std::string& what) {
  const std::string message = Cat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const MappedFile>> MappedFile::Open(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is then
  // rejected as not a regular file).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError(errno, Cat(path, ": cannot open"));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, Cat(path, ": cannot stat"));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(Cat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    // Writable but private: in-place writes to borrowed tensors get
    // copy-on-write pages from the kernel; the file itself is never changed.
    void* mapping =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      return ErrnoError(error, Cat(path, ": cannot map"));
    }
    data = static_cast<const uint8_t*>(mapping);
  }
  ::close(fd);  // the mapping keeps the file alive
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kindling::io
