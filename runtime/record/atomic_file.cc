#include "kindling/record/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kindling/record/strings.h"

namespace kindling::record {
namespace {

absl::Status ErrnoError(const std::string& what) {
  return absl::InternalError(Cat(what, ": ", std::strerror(errno)));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& target) {
  std::string temp = target + ".tmp.XXXXXX";
  std::vector<char> buffer(temp.begin(), temp.end());
  buffer.push_back('\0');
  const int fd = ::mkostemp(buffer.data(), O_CLOEXEC);
  if (fd < 0) {
    return ErrnoError(
        Cat(target, ": cannot create a temporary file beside it"));
  }
  // mkstemp creates 0600; a checkpoint should get the usual umask'd mode.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  return AtomicFile(target, std::string(buffer.data()), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
}

absl::Status AtomicFile::Write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call.
    const size_t chunk = size < (size_t{1} << 30) ? size : (size_t{1} << 30);
    const ssize_t written = ::write(fd_, bytes, chunk);
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(Cat(temp_path_, ": write failed"));
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (::fsync(fd_) != 0) {
    return ErrnoError(Cat(temp_path_, ": fsync failed"));
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    return ErrnoError(Cat(temp_path_, ": close failed"));
  }
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    return ErrnoError(Cat(target_, ": cannot rename ", temp_path_, " over it"));
  }
  committed_ = true;
  // Persist the directory entry too; failure here leaves a complete file.
  const int dir = ::open(DirectoryOf(target_).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

}  // namespace kindling::record
