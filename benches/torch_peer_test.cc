#include "benches/torch_peer.h"

#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kindling::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(PeerLabelTest, NamesTodaysReleaseTorchAndOldOnesByVersion) {
  EXPECT_EQ(PeerLabel("2.15.0+cu132"), "torch");
  EXPECT_EQ(PeerLabel("3.0.0"), "torch");
  EXPECT_EQ(PeerLabel("1.13.0a0"), "torch113");
  EXPECT_EQ(PeerLabel("1.9.1"), "torch19");
}

TEST(PeerPythonsTest, EnvironmentChoosesTodaysPeerFirst) {
  ScopedEnv today("KINDLING_PEER_PYTHON", "/opt/today/bin/python");
  ScopedEnv old("KINDLING_TORCH113_PYTHON", nullptr);
  EXPECT_THAT(PeerPythons(),
              ElementsAre("/opt/today/bin/python", "/usr/bin/python3"));
}

TEST(PeerPythonsTest, OneInterpreterIsListedOnce) {
  ScopedEnv today("KINDLING_PEER_PYTHON", "/usr/bin/python3");
  ScopedEnv old("KINDLING_TORCH113_PYTHON", nullptr);
  EXPECT_THAT(PeerPythons(), ElementsAre("/usr/bin/python3"));
}

TEST(PeerPythonsTest, WithoutThePeersEnvironmentOnly113IsMeasured) {
  // The test's working directory (runfiles) holds no .peers/.
  ScopedEnv today("KINDLING_PEER_PYTHON", nullptr);
  ScopedEnv workspace("BUILD_WORKSPACE_DIRECTORY", "/nonexistent");
  ScopedEnv old("KINDLING_TORCH113_PYTHON", "/custom/python3");
  EXPECT_THAT(PeerPythons(), ElementsAre("/custom/python3"));
}

// Through its runfiles a binary finds the tree it was built from, where
// tools/peers puts today's peers, from any working directory.
TEST(SourceTreeTest, IsTheWorkspaceThatHoldsThePeerScripts) {
  const std::string tree = SourceTree();
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(access((tree + "/benches/peers/torch_ops.py").c_str(), R_OK), 0);
  EXPECT_EQ(access((tree + "/WORKSPACE").c_str(), R_OK), 0);
}

TEST(CoresTest, ListsTheAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::string expected;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    expected += (expected.empty() ? "" : ",") + std::to_string(cpu);
  }
  EXPECT_EQ(CoresOfThisProcess(), expected);
}

// Debian's python3-torch is one of tools/bazel's development packages.
TEST(TorchOpsPeerTest, Debians113AnswersWithItsVersionAndATiming) {
  TorchOpsPeer peer("/usr/bin/python3", /*threads=*/2);
  ASSERT_EQ(peer.error(), "");
  EXPECT_THAT(peer.version(), ::testing::StartsWith("1.13"));
  EXPECT_EQ(peer.label(), "torch113");
  const TorchOpsPeer::Timing timing = peer.Time("mlp_forward_backward", 2, 1);
  EXPECT_EQ(peer.error(), "");
  EXPECT_GT(timing.wall, 0);
  EXPECT_GT(timing.cpu, 0);
}

TEST(TorchOpsPeerTest, UnknownOpIsAnError) {
  TorchOpsPeer peer("/usr/bin/python3", /*threads=*/1);
  ASSERT_EQ(peer.error(), "");
  const TorchOpsPeer::Timing timing = peer.Time("no_such_op", 1, 0);
  EXPECT_LT(timing.wall, 0);
  EXPECT_THAT(peer.error(), HasSubstr("bad answer for no_such_op"));
}

TEST(TorchOpsPeerTest, InterpreterWithoutTorchIsNamed) {
  TorchOpsPeer peer("/bin/false", /*threads=*/2);
  EXPECT_THAT(peer.error(), HasSubstr("/bin/false"));
  EXPECT_LT(peer.Time("sum_all", 1, 0).wall, 0);
}

}  // namespace
}  // namespace kindling::bench
