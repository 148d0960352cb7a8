#include "kindling/record/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kindling/record/strings.h"

namespace kindling::record {
namespace {

[[nodiscard]] absl::Status ErrnoError(const std::string& what) {
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
  // open(O_CREAT | O_EXCL, 0666) lets the kernel apply the process umask, so
  // the checkpoint gets the usual mode without touching the umask (changing
  // it, even briefly, races with files other threads create). The name is
  // random; O_EXCL makes a collision fail with EEXIST, and then we retry.
  std::random_device entropy;
  std::mt19937_64 random(
      (static_cast<uint64_t>(entropy()) << 32) ^ entropy() ^
      static_cast<uint64_t>(::getpid()) ^
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count()));
  constexpr int kAttempts = 100;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::string temp = absl::StrFormat("%s.tmp.%016x", target,
                                       static_cast<uint64_t>(random()));
    const int fd =
        ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) return AtomicFile(target, std::move(temp), fd);
    if (errno == EEXIST || errno == EINTR) continue;
    return ErrnoError(
        Cat(target, ": cannot create a temporary file beside it"));
  }
  return absl::AlreadyExistsError(
      Cat(target, ": cannot create a temporary file beside it: ", kAttempts,
          " random names were all taken"));
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
