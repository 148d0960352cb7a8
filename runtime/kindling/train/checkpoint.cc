#include "kindling/train/checkpoint.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/tensor_file.h"

namespace kindling::train {
namespace {

namespace fs = std::filesystem;

constexpr char kLatestFile[] = "latest";
constexpr char kDirPrefix[] = "step-";
// Checkpoints kept: the newest and the one before it, so that a checkpoint
// found damaged later (a disk error) still leaves one to fall back to.
constexpr size_t kKeep = 2;

absl::Status FsError(const std::string& what, const std::string& path,
                     const std::error_code& error) {
  return absl::InternalError(
      absl::StrCat(what, " '", path, "': ", error.message()));
}

}  // namespace

absl::StatusOr<std::string> LatestCheckpointDir(const std::string& out_dir) {
  const std::string latest = out_dir + "/" + kLatestFile;
  std::ifstream in(latest);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("no training checkpoint in '",
                                            out_dir, "' (no '", kLatestFile,
                                            "' file)"));
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string name(absl::StripAsciiWhitespace(text.str()));
  if (!absl::StartsWith(name, kDirPrefix) || name.find('/') != name.npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        latest, ": '", name, "' is not a checkpoint name (step-<N>)"));
  }
  return out_dir + "/" + name;
}

namespace checkpoint_internal {

absl::StatusOr<std::string> MakeCheckpointDir(const std::string& out_dir,
                                              int64_t step) {
  const std::string dir =
      absl::StrFormat("%s/%s%08d", out_dir, kDirPrefix, step);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return FsError("cannot create checkpoint directory", dir, error);
  return dir;
}

absl::Status CommitLatest(const std::string& out_dir,
                          const std::string& checkpoint_dir) {
  const std::string name = fs::path(checkpoint_dir).filename().string();
  absl::StatusOr<io::AtomicFile> file =
      io::AtomicFile::Create(out_dir + "/" + kLatestFile);
  if (!file.ok()) return file.status();
  KINDLING_RETURN_IF_ERROR(file->Write(name + "\n"));
  KINDLING_RETURN_IF_ERROR(file->Commit());

  // Prune: names sort by step (zero-padded); keep the newest kKeep and the
  // committed one. A failure here loses nothing, so it is not an error.
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(out_dir, error)) {
    const std::string entry_name = entry.path().filename().string();
    if (entry.is_directory() && absl::StartsWith(entry_name, kDirPrefix)) {
      names.push_back(entry_name);
    }
  }
  std::sort(names.begin(), names.end());
  for (size_t i = 0; i + kKeep < names.size(); ++i) {
    if (names[i] == name) continue;
    fs::remove_all(out_dir + "/" + names[i], error);
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainState> ReadTrainState(const std::string& model_path) {
  absl::StatusOr<std::shared_ptr<const io::TensorFile>> file =
      io::TensorFile::Open(model_path);
  if (!file.ok()) return file.status();
  return DecodeTrainState((*file)->header(), model_path);
}

}  // namespace checkpoint_internal
}  // namespace kindling::train
