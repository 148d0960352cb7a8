// SaveModule() killed at a random moment never leaves a torn checkpoint: the
// target always parses and holds one complete save. (Own binary: it forks.)
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/record/checkpoint.h"
#include "kindling/record/safetensors_file.h"
#include "tests/record/record_test_modules.kindling.h"

namespace {

using ::kindling::Tensor;

// A one-layer net of `width` x `width` weights all equal to `value`.
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

// Runs only in the child process: saves complete checkpoints of value 1, 2,
// 3, ... to $KINDLING_ATOMIC_SAVE_PATH until killed.
TEST(AtomicSaveTest, SaveLoop) {
  const char* path = std::getenv("KINDLING_ATOMIC_SAVE_PATH");
  if (path == nullptr)
    GTEST_SKIP() << "run by KillDuringSaveNeverTearsTheTarget";
  for (int value = 1;; ++value) {
    if (!kindling::SaveModule(MakeNet(1024, float(value)), path).ok()) {
      ::_exit(3);
    }
  }
}

TEST(AtomicSaveTest, KillDuringSaveNeverTearsTheTarget) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/atomic.safetensors";
  const std::string directory = dir != nullptr ? dir : "/tmp";
  const int64_t width = 1024;  // ~4 MiB per save
  ASSERT_TRUE(kindling::SaveModule(MakeNet(width, 0.0f), path).ok());
  for (int round = 0; round < 10; ++round) {
    // A fresh process (fork alone would inherit the parent's OpenMP pool,
    // which does not survive fork) runs SaveLoop below until killed.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::setenv("KINDLING_ATOMIC_SAVE_PATH", path.c_str(), 1);
      ::execl("/proc/self/exe", "atomic_save_test",
              "--gtest_filter=AtomicSaveTest.SaveLoop", nullptr);
      ::_exit(4);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 37 * round));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early";

    auto file = kindling::record::SafetensorsFile::Open(path);
    ASSERT_TRUE(file.ok()) << "round " << round << ": " << file.status();
    rectest::Net net = rectest::MakeNet(width, /*blocks=*/1);
    ASSERT_TRUE(kindling::LoadModule(net, path).ok());
    // One complete save: every tensor holds the same value.
    const float value = net.steps.value().to_data<float>()[0];
    for (float element : net.blocks[0].fc.weight->to_data<float>()) {
      ASSERT_EQ(value, element) << "round " << round;
    }
    std::cout << "round " << round << ": target holds save " << value << "\n";
  }
  // Kills that landed mid-write leave a stray temporary (never the target).
  int strays = 0;
  if (DIR* listing = ::opendir(directory.c_str())) {
    while (dirent* entry = ::readdir(listing)) {
      strays +=
          std::string(entry->d_name).rfind("atomic.safetensors.tmp.", 0) == 0;
    }
    ::closedir(listing);
  }
  std::cout << strays << " of 10 kills interrupted a write\n";
}

}  // namespace
