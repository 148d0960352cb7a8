// SaveModule() / AtomicFile killed at random moments never leave a torn
// checkpoint, and whatever temporary file a kill leaves is removed by the
// next save, but never one a live writer owns. (Own binary: it forks and
// re-executes itself as the writer to kill.)
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/module_file.h"
#include "kindling/io/tensor_file.h"
#include "tests/io/record_test_modules.kindling.h"

namespace {

using ::kindling::Tensor;
using ::kindling::io::AtomicFile;

constexpr int64_t kWidth = 1024;  // ~4 MiB of f32 per checkpoint

// --- Helpers -----------------------------------------------------------------

std::string TestDirectory() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// A fresh directory per test, so one test's files never meet another's.
std::string FreshDirectory(const std::string& name) {
  const std::string path = TestDirectory() + "/" + name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

// A one-layer net of `width` x `width` weights, every element `value`.
rectest::Net MakeNet(int64_t width, float value) {
  rectest::Net net = rectest::MakeNet(width, /*blocks=*/1);
  net.input.weight = net.input.weight.load(Tensor<2>::Full({3, width}, value));
  net.input.bias = net.input.bias->load(Tensor<1>::Full({width}, value));
  auto& block = net.blocks[0];
  block.fc.weight =
      block.fc.weight.load(Tensor<2>::Full({width, width}, value));
  block.fc.bias = block.fc.bias->load(Tensor<1>::Full({width}, value));
  block.norm.gamma = block.norm.gamma.load(Tensor<1>::Full({width}, value));
  block.norm.beta = block.norm.beta.load(Tensor<1>::Full({width}, value));
  net.steps.update(Tensor<1>::Full({1}, value));
  return net;
}

// LoadedValue() loads the checkpoint at `path` and returns the one value
// all its elements hold, or an error if it does not load or mixes values
// (a torn file).
absl::StatusOr<float> LoadedValue(const std::string& path) {
  rectest::Net net = rectest::MakeNet(kWidth, /*blocks=*/1);
  if (absl::StatusOr<kindling::LoadReport> report =
          kindling::LoadModule(net, path);
      !report.ok()) {
    return report.status();
  }
  const float value = net.steps.value().to_data<float>()[0];
  const auto& block = net.blocks[0];
  for (const std::vector<float>& elements :
       {net.input.weight->to_data<float>(), (*net.input.bias)->to_data<float>(),
        block.fc.weight->to_data<float>(), (*block.fc.bias)->to_data<float>(),
        block.norm.gamma->to_data<float>(),
        block.norm.beta->to_data<float>()}) {
    for (float element : elements) {
      if (element != value) {
        return absl::DataLossError(
            absl::StrCat(path, ": mixes saves ", value, " and ", element));
      }
    }
  }
  return value;
}

// TempFiles() lists `<base>.tmp.*` in `directory`.
std::vector<std::string> TempFiles(const std::string& directory,
                                   const std::string& base) {
  std::vector<std::string> names;
  if (DIR* listing = ::opendir(directory.c_str())) {
    while (const dirent* entry = ::readdir(listing)) {
      const std::string name = entry->d_name;
      if (name.rfind(base + ".tmp.", 0) == 0) names.push_back(name);
    }
    ::closedir(listing);
  }
  return names;
}

bool Exists(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// O_TMPFILE works in `directory` (ext4, xfs, btrfs, tmpfs do).
bool UnnamedTempFilesWork(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_TMPFILE | O_WRONLY, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A re-executed copy of this binary running one child test (a fresh process:
// fork alone would inherit the parent's OpenMP pool, which does not survive
// fork). The child reports readiness by writing to the pipe named by
// $KINDLING_TEST_READY_FD; Start() waits for that and returns what it wrote.
class ChildWriter {
 public:
  // Runs `test` with `environment` (NAME=value pairs) set.
  ChildWriter(
      const std::string& test,
      const std::vector<std::pair<std::string, std::string>>& environment) {
    int ready[2];
    if (::pipe(ready) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      ::close(ready[0]);
      for (const auto& [name, value] : environment) {
        ::setenv(name.c_str(), value.c_str(), 1);
      }
      ::setenv("KINDLING_TEST_READY_FD", std::to_string(ready[1]).c_str(), 1);
      // The child runs exactly one test, whichever shard the parent is.
      ::unsetenv("GTEST_SHARD_INDEX");
      ::unsetenv("GTEST_TOTAL_SHARDS");
      ::unsetenv("TEST_SHARD_STATUS_FILE");
      const std::string filter = "--gtest_filter=AtomicSaveChild." + test;
      ::execl("/proc/self/exe", "atomic_save_test", filter.c_str(), nullptr);
      ::_exit(4);
    }
    ::close(ready[1]);
    ready_fd_ = ready[0];
  }
  ~ChildWriter() {
    if (pid_ > 0) Kill();
    if (ready_fd_ >= 0) ::close(ready_fd_);
  }

  // WaitUntilReady() returns the child's readiness message, "" if it died.
  std::string WaitUntilReady() {
    std::string message;
    char buffer[256];
    ssize_t n;
    while ((n = ::read(ready_fd_, buffer, sizeof(buffer))) > 0) {
      message.append(buffer, n);
      if (message.back() == '\n') break;
    }
    return message;
  }

  // Kill() sends SIGKILL and returns true when that is what ended the child.
  bool Kill() {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

 private:
  pid_t pid_ = -1;
  int ready_fd_ = -1;
};

// In a child: tell the parent we are ready, with `message`.
void ReportReady(const std::string& message) {
  const int fd = std::atoi(std::getenv("KINDLING_TEST_READY_FD"));
  const std::string line = message + "\n";
  if (::write(fd, line.data(), line.size()) != ssize_t(line.size())) {
    ::_exit(5);
  }
  ::close(fd);
}

// --- Children (run only when re-executed by a parent test) -------------------

bool IsChild() { return std::getenv("KINDLING_TEST_READY_FD") != nullptr; }

// Saves MakeNet(value) to $PATH with SaveModule() until killed.
TEST(AtomicSaveChild, SaveModuleLoop) {
  if (!IsChild()) GTEST_SKIP() << "run by KillDuringSaveModule...";
  const std::string path = std::getenv("PATH_TO_SAVE");
  const float value = std::stof(std::getenv("VALUE_TO_SAVE"));
  const rectest::Net net = MakeNet(kWidth, value);
  ReportReady("saving");
  for (;;) {
    if (!kindling::SaveModule(net, path).ok()) ::_exit(3);
  }
}

// Saves MakeNet(value) once to $STAGING_PATH (another directory), then
// writes those checkpoint bytes to $PATH through a named AtomicFile (the
// fallback where O_TMPFILE is unsupported), in 64 KiB writes, until killed.
TEST(AtomicSaveChild, NamedTempFileLoop) {
  if (!IsChild()) GTEST_SKIP() << "run by KillDuringNamedTempFileSave...";
  const std::string path = std::getenv("PATH_TO_SAVE");
  const std::string staging = std::getenv("STAGING_PATH");
  const float value = std::stof(std::getenv("VALUE_TO_SAVE"));
  if (!kindling::SaveModule(MakeNet(kWidth, value), staging).ok()) ::_exit(3);
  const std::string bytes = ReadAll(staging);
  ReportReady("saving");
  for (;;) {
    absl::StatusOr<AtomicFile> file =
        AtomicFile::Create(path, AtomicFile::TempFile::kNamed);
    if (!file.ok()) ::_exit(3);
    for (size_t at = 0; at < bytes.size(); at += 65536) {
      const size_t size = std::min<size_t>(65536, bytes.size() - at);
      if (!file->Write(bytes.data() + at, size).ok()) ::_exit(3);
    }
    if (!file->Commit().ok()) ::_exit(3);
  }
}

// Opens a named temporary file for $PATH, writes to it, reports its name
// and waits to be killed without committing.
TEST(AtomicSaveChild, HoldTempFile) {
  if (!IsChild()) GTEST_SKIP() << "run by AnotherProcessesLiveTempFile...";
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(
      std::getenv("PATH_TO_SAVE"), AtomicFile::TempFile::kNamed);
  if (!file.ok() || !file->Write("partial").ok()) ::_exit(3);
  ReportReady(file->temp_path());
  for (;;) ::pause();
}

// --- Kill tests
// ----------------------------------------------------------------

// KillRounds() runs `rounds` rounds of: save `old_value` from this process,
// start a child writing `new_value` to the same target in a loop, kill it at a
// random moment within two save durations, then check that
//   * the target loads and holds old_value or new_value, complete;
//   * a leftover temporary file (if `leftovers_are_complete`) is itself a
//     complete checkpoint of new_value;
//   * after this process's next successful save, no temporary file remains.
// Returns how many kills left a temporary file behind.
int KillRounds(const std::string& directory, int rounds,
               const std::string& child_test,
               const std::vector<std::pair<std::string, std::string>>& extra,
               bool leftovers_are_complete) {
  const std::string base = "model.safetensors";
  const std::string path = directory + "/" + base;
  // How long one save takes here sets the window kills land in.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(kindling::SaveModule(MakeNet(kWidth, 0.0f), path).ok());
  const double save_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start)
                             .count();
  std::mt19937 random(1234);
  std::uniform_real_distribution<double> delay_ms(0.0, 2.0 * save_ms + 2.0);
  int leftovers = 0;
  for (int round = 0; round < rounds; ++round) {
    const float old_value = static_cast<float>(2 * round + 2);
    const float new_value = old_value + 1;
    const absl::Status saved =
        kindling::SaveModule(MakeNet(kWidth, old_value), path);
    EXPECT_TRUE(saved.ok()) << saved;
    // The save that just succeeded removed what the last kill left.
    EXPECT_EQ(std::vector<std::string>{}, TempFiles(directory, base))
        << "round " << round;

    std::vector<std::pair<std::string, std::string>> environment = extra;
    environment.emplace_back("PATH_TO_SAVE", path);
    environment.emplace_back("VALUE_TO_SAVE", std::to_string(new_value));
    ChildWriter child(child_test, environment);
    EXPECT_EQ("saving\n", child.WaitUntilReady()) << "round " << round;
    std::this_thread::sleep_for(
        std::chrono::duration<double, std::milli>(delay_ms(random)));
    EXPECT_TRUE(child.Kill()) << "round " << round << ": child exited early";

    const absl::StatusOr<float> value = LoadedValue(path);
    EXPECT_TRUE(value.ok()) << "round " << round << ": " << value.status();
    if (value.ok()) {
      EXPECT_TRUE(*value == old_value || *value == new_value)
          << "round " << round << ": target holds save " << *value
          << ", expected " << old_value << " or " << new_value;
    }
    const std::vector<std::string> left = TempFiles(directory, base);
    leftovers += !left.empty();
    if (leftovers_are_complete) {
      for (const std::string& name : left) {
        const absl::StatusOr<float> temp = LoadedValue(directory + "/" + name);
        EXPECT_TRUE(temp.ok() && *temp == new_value)
            << "round " << round << ": leftover " << name
            << " is not a complete save";
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_TRUE(kindling::SaveModule(MakeNet(kWidth, 1.0f), path).ok());
  EXPECT_EQ(std::vector<std::string>{}, TempFiles(directory, base));
  return leftovers;
}

TEST(AtomicSaveTest, KillDuringSaveModuleNeverTearsAndLeavesNothing) {
  const std::string directory = FreshDirectory("kill_save_module");
  const bool unnamed = UnnamedTempFilesWork(directory);
  // With O_TMPFILE, a kill can only leave a file between Commit()'s link and
  // rename, and then a complete one.
  const int leftovers = KillRounds(directory, 50, "SaveModuleLoop", {},
                                   /*leftovers_are_complete=*/unnamed);
  std::cout << leftovers << " of 50 kills left a temporary file (O_TMPFILE "
            << (unnamed ? "used" : "unsupported here: named fallback")
            << "); the next save removed each\n";
}

TEST(AtomicSaveTest, KillDuringNamedTempFileSaveNeverTearsAndNextSaveCleans) {
  const std::string directory = FreshDirectory("kill_named");
  const std::string staging =
      FreshDirectory("kill_named_staging") + "/staged.safetensors";
  // Kills mid-write leave partial temporary files here.
  const int leftovers = KillRounds(directory, 50, "NamedTempFileLoop",
                                   {{"STAGING_PATH", staging}},
                                   /*leftovers_are_complete=*/false);
  std::cout << leftovers
            << " of 50 kills left a temporary file (named fallback); the next "
               "save removed each\n";
}

// --- Live writers are left alone -------------------------------------------

TEST(AtomicSaveTest, AnotherSaveKeepsALiveWritersTempFile) {
  const std::string directory = FreshDirectory("live_writer");
  const std::string path = directory + "/model.safetensors";
  absl::StatusOr<AtomicFile> live =
      AtomicFile::Create(path, AtomicFile::TempFile::kNamed);
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(live->Write("the live writer's bytes").ok());
  ASSERT_TRUE(Exists(live->temp_path()));

  ASSERT_TRUE(kindling::SaveModule(MakeNet(8, 1.0f), path).ok());
  EXPECT_TRUE(Exists(live->temp_path()));
  // The live writer still commits, and its commit wins.
  ASSERT_TRUE(live->Commit().ok());
  EXPECT_EQ("the live writer's bytes", ReadAll(path));
  EXPECT_EQ(std::vector<std::string>{},
            TempFiles(directory, "model.safetensors"));
}

TEST(AtomicSaveTest, AnotherProcessesLiveTempFileIsKeptUntilItDies) {
  const std::string directory = FreshDirectory("live_process");
  const std::string path = directory + "/model.safetensors";
  ChildWriter child("HoldTempFile", {{"PATH_TO_SAVE", path}});
  std::string temp = child.WaitUntilReady();
  ASSERT_FALSE(temp.empty()) << "the child died before creating its file";
  temp.pop_back();  // the newline
  ASSERT_TRUE(Exists(temp));

  ASSERT_TRUE(kindling::SaveModule(MakeNet(8, 1.0f), path).ok());
  EXPECT_TRUE(Exists(temp)) << "a live process's temporary file was removed";

  ASSERT_TRUE(child.Kill());  // its lock goes with it
  ASSERT_TRUE(kindling::SaveModule(MakeNet(8, 2.0f), path).ok());
  EXPECT_FALSE(Exists(temp)) << "a dead process's temporary file was kept";
}

// --- Stale files and look-alikes
// ----------------------------------------------

TEST(AtomicFileTest, CreateRemovesStaleTempFilesButNoLookAlikes) {
  const std::string directory = FreshDirectory("stale");
  const std::string path = directory + "/m.safetensors";
  const std::vector<std::string> stale{
      "m.safetensors.tmp.4242.0123456789abcdef",  // this version's name
      "m.safetensors.tmp.0123456789abcdef",       // earlier versions' name
  };
  const std::vector<std::string> kept{
      "m.safetensors.tmp.notes",
      "m.safetensors.tmp.4242.0123456789ABCDEF",
      "m.safetensors.tmp.4242.0123456789abcde",
      "m.safetensors.tmp.x.0123456789abcdef",
      "other.safetensors.tmp.1.0123456789abcdef",
      "m.safetensors",
  };
  for (const auto& name : stale) WriteAll(directory + "/" + name, "stale");
  for (const auto& name : kept) WriteAll(directory + "/" + name, "keep");
  // A directory with a temporary file's name is not a file to remove.
  const std::string lookalike_directory =
      directory + "/m.safetensors.tmp.7.fedcba9876543210";
  ASSERT_EQ(0, ::mkdir(lookalike_directory.c_str(), 0777));

  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const auto& name : stale) {
    EXPECT_FALSE(Exists(directory + "/" + name)) << name;
  }
  for (const auto& name : kept) {
    EXPECT_TRUE(Exists(directory + "/" + name)) << name;
  }
  EXPECT_TRUE(Exists(lookalike_directory));
}

// --- The temporary file itself
// ------------------------------------------------

TEST(AtomicFileTest, UnnamedTempFileHasNoNameUntilCommit) {
  const std::string directory = FreshDirectory("unnamed");
  if (!UnnamedTempFilesWork(directory)) {
    GTEST_SKIP() << "O_TMPFILE unsupported in " << directory
                 << "; AtomicFileTest.NamedTempFile* cover the fallback";
  }
  const std::string path = directory + "/m.bin";
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->Write("new").ok());
  EXPECT_EQ("", file->temp_path());
  EXPECT_EQ(std::vector<std::string>{}, TempFiles(directory, "m.bin"));
  ASSERT_TRUE(file->Commit().ok());
  EXPECT_EQ("new", ReadAll(path));
  EXPECT_EQ(std::vector<std::string>{}, TempFiles(directory, "m.bin"));
}

TEST(AtomicFileTest, DestroyedWithoutCommitLeavesTheTargetAndNoTempFile) {
  for (const auto kind :
       {AtomicFile::TempFile::kUnnamed, AtomicFile::TempFile::kNamed}) {
    const std::string directory = FreshDirectory("abandoned");
    const std::string path = directory + "/m.bin";
    WriteAll(path, "old");
    {
      absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, kind);
      ASSERT_TRUE(file.ok()) << file.status();
      ASSERT_TRUE(file->Write("new").ok());
    }
    EXPECT_EQ("old", ReadAll(path));
    EXPECT_EQ(std::vector<std::string>{}, TempFiles(directory, "m.bin"));
  }
}

TEST(AtomicFileTest, CommittedFileGetsTheUmaskMode) {
  const mode_t umask = ::umask(022);
  for (const auto kind :
       {AtomicFile::TempFile::kUnnamed, AtomicFile::TempFile::kNamed}) {
    const std::string directory = FreshDirectory("mode");
    const std::string path = directory + "/m.bin";
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, kind);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(file->Write("x").ok());
    ASSERT_TRUE(file->Commit().ok());
    struct stat info;
    ASSERT_EQ(0, ::stat(path.c_str(), &info));
    EXPECT_EQ(0644u, info.st_mode & 0777u);
  }
  ::umask(umask);
}

TEST(AtomicFileTest, MissingDirectoryIsAnErrorNamingTheTarget) {
  const std::string path = TestDirectory() + "/no/such/dir/m.bin";
  for (const auto kind :
       {AtomicFile::TempFile::kUnnamed, AtomicFile::TempFile::kNamed}) {
    absl::StatusOr<AtomicFile> file = AtomicFile::Create(path, kind);
    ASSERT_FALSE(file.ok());
    EXPECT_NE(std::string::npos, file.status().message().find(path))
        << file.status();
  }
}

}  // namespace
