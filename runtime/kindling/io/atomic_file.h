// AtomicFile: write a file so that readers see the old contents or the new,
// never a torn mix, and so that a crashed writer leaves no debris behind.
//
//   absl::StatusOr<AtomicFile> file = AtomicFile::Create("model.safetensors");
//   KINDLING_RETURN_IF_ERROR(file->Write(header));
//   KINDLING_RETURN_IF_ERROR(file->Commit());
//
// Guarantees, for a writer killed at any moment (SIGKILL, OOM, preemption):
//
//   * The target is always a complete file: the old one until Commit()'s
//     rename, the new one after it. Commit() fsyncs the data before the
//     rename and the directory after it, so this also holds across a power
//     loss.
//   * Nothing is left behind while the data is being written. Where the file
//     system supports O_TMPFILE (ext4, xfs, btrfs, tmpfs), the data goes to
//     an unnamed inode in the target's directory, which the kernel frees
//     when its last descriptor closes, so a crash mid-write leaks nothing.
//     Commit() then links the inode to a temporary name and renames that
//     over the target; only a crash in the few microseconds between the link
//     and the rename leaves a (complete) temporary file.
//   * Whatever a crash does leave is removed by the next Create() for the
//     same target. Temporary files are named `<target>.tmp.<pid>.<16 hex>`,
//     and their writer holds an exclusive flock() on them from creation
//     until after the rename. Create() removes each file so named whose
//     lock it can take: a lock is released when its owner exits however it
//     exits, so a lock that can be taken belongs to no live writer. A live
//     writer's temporary file, in this process or another, is never removed.
//     (A named file is locked right after it is created; should a cleaner
//     remove it in between, before any data is written, the writer sees its
//     name gone and picks another. Files named `<target>.tmp.<16 hex>`, as
//     versions before this one named them without a lock, count as stale.)
//
// Where O_TMPFILE is unsupported (the kernel or file system answers
// EOPNOTSUPP, EISDIR or EINVAL: FUSE, older NFS, overlayfs on some kernels)
// or /proc is not mounted, Create() falls back to a named temporary file
// from the start. A crash mid-write then leaves that file, which the next
// save removes as above. On file systems without flock() (some network file
// systems answer ENOLCK) no lock can be taken, so nothing is ever removed
// there: stale files may stay, but a live writer's never goes.
//
// If the writer is destroyed without a successful Commit() (an error, an
// early return), its temporary file is removed and the target untouched.
//
// Thread safety: an AtomicFile is used by one thread at a time; several
// AtomicFiles may write the same target concurrently (the last Commit()
// wins, each leaves a complete file).
#ifndef KINDLING_IO_ATOMIC_FILE_H_
#define KINDLING_IO_ATOMIC_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kindling::io {

class AtomicFile {
 public:
  // TempFile picks how the data is staged until Commit(). kUnnamed (the
  // default) uses O_TMPFILE where it works and kNamed where it does not;
  // kNamed always uses a named, locked temporary file (for tests of the
  // fallback, and for callers that want to see the file while it grows).
  enum class TempFile { kUnnamed, kNamed };

  // Create() removes stale temporary files of `target` (see above) and opens
  // a new one in the target's directory. Errors name the target.
  [[nodiscard]] static absl::StatusOr<AtomicFile> Create(
      const std::string& target, TempFile temp_file = TempFile::kUnnamed);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  // Write() appends `size` bytes at `data`, retrying short writes.
  [[nodiscard]] absl::Status Write(const void* data, size_t size);
  [[nodiscard]] absl::Status Write(std::string_view bytes) {
    return Write(bytes.data(), bytes.size());
  }

  // Commit() makes the written bytes the target's contents, durably. Call it
  // at most once.
  [[nodiscard]] absl::Status Commit();

  // temp_path() is the temporary file's name, or "" while the data sits in
  // an unnamed O_TMPFILE inode.
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFile(std::string target, std::string temp_path, int fd)
      : target_(std::move(target)), temp_path_(std::move(temp_path)), fd_(fd) {}

  // LinkUnnamed() gives the O_TMPFILE inode a temporary name in the target's
  // directory (temp_path_).
  [[nodiscard]] absl::Status LinkUnnamed();

  std::string target_;
  // Empty while the data is in an unnamed inode.
  std::string temp_path_;
  // The temporary file, open for writing and holding its flock() until the
  // AtomicFile is destroyed, which is after Commit()'s rename.
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace kindling::io

#endif  // KINDLING_IO_ATOMIC_FILE_H_
