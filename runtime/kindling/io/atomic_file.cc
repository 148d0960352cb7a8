#include "kindling/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/strings.h"

namespace kindling::io {
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

std::string BaseNameOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsHexDigits(std::string_view text, size_t count) {
  if (text.size() != count) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool IsDecimal(std::string_view text) {
  if (text.empty() || text.size() > 10) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// IsTempFileName() is true for `<base>.tmp.<pid>.<16 hex>` (this version's
// temporary files) and `<base>.tmp.<16 hex>` (earlier versions').
bool IsTempFileName(std::string_view name, std::string_view base) {
  const std::string_view infix = ".tmp.";
  if (name.size() <= base.size() + infix.size() ||
      name.substr(0, base.size()) != base ||
      name.substr(base.size(), infix.size()) != infix) {
    return false;
  }
  const std::string_view suffix = name.substr(base.size() + infix.size());
  if (IsHexDigits(suffix, 16)) return true;
  const size_t dot = suffix.find('.');
  return dot != std::string_view::npos && IsDecimal(suffix.substr(0, dot)) &&
         IsHexDigits(suffix.substr(dot + 1), 16);
}

// SameFile() is true when `fd` and `name` in `directory_fd` are one inode.
bool SameFile(int fd, int directory_fd, const char* name) {
  struct stat opened, named;
  return ::fstat(fd, &opened) == 0 &&
         ::fstatat(directory_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
         opened.st_dev == named.st_dev && opened.st_ino == named.st_ino;
}

// RemoveStaleTempFiles() unlinks the temporary files of `base` in
// `directory` whose flock() can be taken: their writers are gone. The file
// is unlinked while the lock is held, and a writer checks after taking its
// own lock that its name still refers to its file (LockedTempFile), so a
// writer that created its file a moment ago, and has not locked it yet,
// notices and picks another name. Errors are ignored: cleaning is best
// effort and must never fail a save.
void RemoveStaleTempFiles(const std::string& directory,
                          const std::string& base) {
  DIR* listing = ::opendir(directory.c_str());
  if (listing == nullptr) return;
  const int directory_fd = ::dirfd(listing);
  while (const dirent* entry = ::readdir(listing)) {
    if (!IsTempFileName(entry->d_name, base)) continue;
    const int fd = ::openat(directory_fd, entry->d_name,
                            O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat info;
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        SameFile(fd, directory_fd, entry->d_name)) {
      ::unlinkat(directory_fd, entry->d_name, 0);
    }
    ::close(fd);
  }
  ::closedir(listing);
}

// LockForWriting() takes the writer's exclusive lock on a temporary file.
// File systems without flock() answer ENOLCK or EOPNOTSUPP; the writer then
// goes on unlocked, and since no cleaner can lock it either, nothing there
// is ever removed.
bool LockForWriting(int fd) {
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    return errno == ENOLCK || errno == EOPNOTSUPP || errno == EINVAL;
  }
  return true;
}

// TempNames yields `<target>.tmp.<pid>.<16 hex>` names. The pid only helps a
// person reading a directory listing; uniqueness comes from 64 random bits
// and O_EXCL / linkat's EEXIST.
class TempNames {
 public:
  explicit TempNames(const std::string& target)
      : target_(target), pid_(::getpid()), random_(Seed()) {}

  std::string Next() {
    return absl::StrFormat("%s.tmp.%d.%016x", target_, pid_,
                           static_cast<uint64_t>(random_()));
  }

 private:
  static uint64_t Seed() {
    std::random_device entropy;
    return (static_cast<uint64_t>(entropy()) << 32) ^ entropy() ^
           static_cast<uint64_t>(::getpid()) ^
           static_cast<uint64_t>(
               std::chrono::steady_clock::now().time_since_epoch().count());
  }

  const std::string& target_;
  const int pid_;
  std::mt19937_64 random_;
};

constexpr int kNameAttempts = 100;

// OpenUnnamed() opens an O_TMPFILE inode in `directory`, or -1 with errno.
int OpenUnnamed(const std::string& directory) {
  // linkat() through /proc/self/fd needs /proc; without it, use a name.
  if (::access("/proc/self/fd", X_OK) != 0) {
    errno = EOPNOTSUPP;
    return -1;
  }
  // The mode is 0666 less the umask, as for a named file.
  return ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
}

// O_TMPFILE's answers where it is unsupported: EISDIR from kernels that
// predate it (they see O_DIRECTORY), EOPNOTSUPP or EINVAL from file systems
// without it.
bool UnnamedIsUnsupported(int error) {
  return error == EOPNOTSUPP || error == EISDIR || error == EINVAL;
}

// LinkFile() gives the open file `fd` the name `path`, or returns false with
// errno. linkat() through /proc/self/fd works for any user; AT_EMPTY_PATH,
// tried when /proc has gone away since Create(), needs CAP_DAC_READ_SEARCH
// on kernels before 6.10.
bool LinkFile(int fd, const std::string& path) {
  const std::string fd_path = absl::StrFormat("/proc/self/fd/%d", fd);
  if (::linkat(AT_FDCWD, fd_path.c_str(), AT_FDCWD, path.c_str(),
               AT_SYMLINK_FOLLOW) == 0) {
    return true;
  }
  if (errno != ENOENT) return false;
  return ::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0;
}

}  // namespace

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& target,
                                              TempFile temp_file) {
  const std::string directory = DirectoryOf(target);
  RemoveStaleTempFiles(directory, BaseNameOf(target));
  if (temp_file == TempFile::kUnnamed) {
    const int fd = OpenUnnamed(directory);
    if (fd >= 0) {
      // Locked from the start, so that once Commit() links it to a name,
      // no cleaner can remove it before the rename.
      if (!LockForWriting(fd)) {
        const absl::Status error =
            ErrnoError(Cat(target, ": cannot lock a temporary file beside it"));
        ::close(fd);
        return error;
      }
      return AtomicFile(target, "", fd);
    }
    if (!UnnamedIsUnsupported(errno)) {
      return ErrnoError(
          Cat(target, ": cannot create a temporary file beside it"));
    }
  }
  // A named temporary file: open(O_CREAT | O_EXCL, 0666) lets the kernel
  // apply the umask without touching it (changing it, even briefly, races
  // with files other threads create).
  TempNames names(target);
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    std::string temp = names.Next();
    const int fd =
        ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST || errno == EINTR) continue;
      return ErrnoError(
          Cat(target, ": cannot create a temporary file beside it"));
    }
    if (!LockForWriting(fd)) {
      const absl::Status error =
          ErrnoError(Cat(temp, ": cannot lock the temporary file"));
      ::close(fd);
      ::unlink(temp.c_str());
      return error;
    }
    // Another save's cleaner may have removed the name between our open()
    // and flock(), when the file looked unowned: then try a new name.
    if (SameFile(fd, AT_FDCWD, temp.c_str())) {
      return AtomicFile(target, std::move(temp), fd);
    }
    ::close(fd);
  }
  return absl::AlreadyExistsError(
      Cat(target, ": cannot create a temporary file beside it: ", kNameAttempts,
          " random names were all taken"));
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : target_(std::move(other.target_)),
      temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

AtomicFile::~AtomicFile() {
  // Unlink before close: the name goes while the lock still guards it.
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  if (fd_ >= 0) ::close(fd_);
}

absl::Status AtomicFile::Write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call.
    const size_t chunk = size < (size_t{1} << 30) ? size : (size_t{1} << 30);
    const ssize_t written = ::write(fd_, bytes, chunk);
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(
          Cat(temp_path_.empty() ? target_ + " (temporary file)" : temp_path_,
              ": write failed"));
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::LinkUnnamed() {
  TempNames names(target_);
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    std::string temp = names.Next();
    // linkat() cannot replace an existing name, hence a temporary name and
    // a rename() over the target afterwards.
    if (LinkFile(fd_, temp)) {
      temp_path_ = std::move(temp);
      return absl::OkStatus();
    }
    if (errno == EEXIST || errno == EINTR) continue;
    return ErrnoError(
        Cat(target_, ": cannot link the temporary file beside it"));
  }
  return absl::AlreadyExistsError(Cat(
      target_, ": cannot link the temporary file beside it: ", kNameAttempts,
      " random names were all taken"));
}

absl::Status AtomicFile::Commit() {
  if (::fsync(fd_) != 0) {
    return ErrnoError(Cat(target_, ": fsync of the temporary file failed"));
  }
  if (temp_path_.empty()) {
    KINDLING_RETURN_IF_ERROR(LinkUnnamed());
  }
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0) {
    return ErrnoError(Cat(target_, ": cannot rename ", temp_path_, " over it"));
  }
  committed_ = true;
  // Only now give up the lock: until the rename, a cleaner must see the
  // temporary file as owned. The data is already fsync'd, so close() has
  // nothing left to report.
  ::close(std::exchange(fd_, -1));
  // Persist the directory entry too; failure here leaves a complete file.
  const int dir =
      ::open(DirectoryOf(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

}  // namespace kindling::io
