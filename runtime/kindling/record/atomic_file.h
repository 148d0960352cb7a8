// AtomicFile: write a file so that readers see the old contents or the new,
// never a torn mix.
//
// Create() opens a temporary file beside the target (same directory, so the
// final rename stays on one file system). Write() appends; Commit() flushes,
// fsyncs the file, renames it over the target and fsyncs the directory so the
// rename itself survives a crash. If the writer is destroyed without a
// successful Commit() (an error, an early return), the temporary file is
// removed and the target is untouched. A process killed mid-write leaves at
// most a stray `<target>.tmp.<16 hex digits>`, never a partial target.
//
//   absl::StatusOr<AtomicFile> file = AtomicFile::Create("model.safetensors");
//   RETURN_IF_ERROR(file->Write(header));
//   RETURN_IF_ERROR(file->Commit());
#ifndef KINDLING_RECORD_ATOMIC_FILE_H_
#define KINDLING_RECORD_ATOMIC_FILE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kindling::record {

class AtomicFile {
 public:
  [[nodiscard]] static absl::StatusOr<AtomicFile> Create(
      const std::string& target);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  ~AtomicFile();

  // Write() appends `size` bytes at `data`, retrying short writes.
  [[nodiscard]] absl::Status Write(const void* data, size_t size);
  [[nodiscard]] absl::Status Write(std::string_view bytes) {
    return Write(bytes.data(), bytes.size());
  }

  // Commit() makes the written bytes the target's contents, durably.
  [[nodiscard]] absl::Status Commit();

  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicFile(std::string target, std::string temp_path, int fd)
      : target_(std::move(target)), temp_path_(std::move(temp_path)), fd_(fd) {}

  std::string target_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace kindling::record

#endif  // KINDLING_RECORD_ATOMIC_FILE_H_
