// ReadLaunchEnvironment's rules over a fake environment: single process,
// RANK/WORLD_SIZE/MASTER_*, mpirun, and each mistake's message.
#include "kindling/distributed/launch_environment.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kindling::distributed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Launcher = LaunchEnvironment::Launcher;
using Variables = std::map<std::string, std::string>;

absl::StatusOr<LaunchEnvironment> Read(const Variables& variables) {
  return ReadLaunchEnvironment(
      [&variables](const std::string& name) -> std::optional<std::string> {
        auto it = variables.find(name);
        if (it == variables.end()) return std::nullopt;
        return it->second;
      });
}

// ErrorOf() is the message of the InvalidArgument error `variables` give.
std::string ErrorOf(const Variables& variables) {
  absl::StatusOr<LaunchEnvironment> env = Read(variables);
  EXPECT_FALSE(env.ok());
  if (env.ok()) return "";
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(env.status().message());
}

Variables TwoRanks() {
  return {{"RANK", "1"},
          {"WORLD_SIZE", "2"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"}};
}

TEST(LaunchEnvironmentTest, NoVariablesIsASingleProcess) {
  absl::StatusOr<LaunchEnvironment> env = Read({});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kSingle);
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->world_size, 1);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->local_world_size, 1);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 0);
  EXPECT_EQ(env->ToString(),
            "rank 0 of 1 (local 0), no rendezvous store, single process");
}

TEST(LaunchEnvironmentTest, EmptyValuesCountAsUnset) {
  absl::StatusOr<LaunchEnvironment> env = Read({{"RANK", ""}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kSingle);
}

TEST(LaunchEnvironmentTest, ReadsTheEnvironmentVariables) {
  Variables variables = TwoRanks();
  variables["LOCAL_RANK"] = "0";
  variables["LOCAL_WORLD_SIZE"] = "1";
  absl::StatusOr<LaunchEnvironment> env = Read(variables);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kEnvironment);
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->world_size, 2);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->local_world_size, 1);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
}

TEST(LaunchEnvironmentTest, LocalRankAndSizeDefaultToTheGlobalOnes) {
  absl::StatusOr<LaunchEnvironment> env = Read(TwoRanks());
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->ToString(),
            "rank 1 of 2 (local 1), rendezvous 127.0.0.1:29500, launched by "
            "environment");
}

TEST(LaunchEnvironmentTest, OneProcessNeedsNoMaster) {
  absl::StatusOr<LaunchEnvironment> env =
      Read({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kEnvironment);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 0);
}

TEST(LaunchEnvironmentTest, RankWithoutWorldSizeNamesWorldSize) {
  EXPECT_THAT(ErrorOf({{"RANK", "0"}}),
              AllOf(HasSubstr("WORLD_SIZE is not"), HasSubstr("RANK is set")));
}

TEST(LaunchEnvironmentTest, WorldSizeWithoutRankNamesRank) {
  EXPECT_THAT(ErrorOf({{"WORLD_SIZE", "2"}}),
              AllOf(HasSubstr("WORLD_SIZE is set"), HasSubstr("RANK is not")));
}

TEST(LaunchEnvironmentTest, OtherVariablesWithoutRankAndWorldSize) {
  EXPECT_THAT(ErrorOf({{"LOCAL_RANK", "0"}, {"MASTER_PORT", "29500"}}),
              AllOf(HasSubstr("RANK and WORLD_SIZE are not set"),
                    HasSubstr("LOCAL_RANK, MASTER_PORT")));
}

TEST(LaunchEnvironmentTest, NonIntegersNameTheVariableAndText) {
  Variables variables = TwoRanks();
  variables["RANK"] = "one";
  EXPECT_THAT(ErrorOf(variables),
              AllOf(HasSubstr("RANK must be an integer"), HasSubstr("'one'")));
  variables = TwoRanks();
  variables["WORLD_SIZE"] = "2x";
  EXPECT_THAT(ErrorOf(variables), AllOf(HasSubstr("WORLD_SIZE must be an "
                                                  "integer"),
                                        HasSubstr("'2x'")));
  variables = TwoRanks();
  variables["LOCAL_RANK"] = "a";
  EXPECT_THAT(ErrorOf(variables), HasSubstr("LOCAL_RANK must be an integer"));
  variables = TwoRanks();
  variables["MASTER_PORT"] = "http";
  EXPECT_THAT(
      ErrorOf(variables),
      AllOf(HasSubstr("MASTER_PORT must be an integer"), HasSubstr("'http'")));
}

TEST(LaunchEnvironmentTest, WorldSizeMustBePositive) {
  EXPECT_THAT(ErrorOf({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
              HasSubstr("WORLD_SIZE must be at least 1, got 0"));
}

TEST(LaunchEnvironmentTest, RankMustBeNonNegative) {
  Variables variables = TwoRanks();
  variables["RANK"] = "-1";
  EXPECT_THAT(ErrorOf(variables), HasSubstr("RANK must be non-negative"));
}

TEST(LaunchEnvironmentTest, RankMustBeBelowWorldSize) {
  Variables variables = TwoRanks();
  variables["RANK"] = "3";
  EXPECT_THAT(ErrorOf(variables),
              HasSubstr("RANK=3 is not below WORLD_SIZE=2"));
  variables["RANK"] = "2";
  EXPECT_THAT(ErrorOf(variables),
              HasSubstr("RANK=2 is not below WORLD_SIZE=2"));
}

TEST(LaunchEnvironmentTest, LocalRankMustFitTheLocalWorld) {
  Variables variables = TwoRanks();
  variables["LOCAL_WORLD_SIZE"] = "1";
  // LOCAL_RANK defaults to RANK=1, which does not fit one local process.
  EXPECT_THAT(ErrorOf(variables),
              AllOf(HasSubstr("LOCAL_RANK (defaulted to RANK=1)"),
                    HasSubstr("LOCAL_WORLD_SIZE=1")));
  variables["LOCAL_RANK"] = "-1";
  EXPECT_THAT(ErrorOf(variables), HasSubstr("LOCAL_RANK=-1 is not in"));
  variables = TwoRanks();
  variables["LOCAL_WORLD_SIZE"] = "3";
  EXPECT_THAT(ErrorOf(variables),
              HasSubstr("LOCAL_WORLD_SIZE must be between 1 and WORLD_SIZE=2"));
}

TEST(LaunchEnvironmentTest, MasterAddrIsRequiredForSeveralProcesses) {
  Variables variables = TwoRanks();
  variables.erase("MASTER_ADDR");
  EXPECT_THAT(ErrorOf(variables),
              AllOf(HasSubstr("MASTER_ADDR is not set"),
                    HasSubstr("WORLD_SIZE=2"), HasSubstr("MASTER_ADDR=")));
}

TEST(LaunchEnvironmentTest, MasterPortIsRequiredForSeveralProcesses) {
  Variables variables = TwoRanks();
  variables.erase("MASTER_PORT");
  EXPECT_THAT(ErrorOf(variables), AllOf(HasSubstr("MASTER_PORT is not set"),
                                        HasSubstr("MASTER_PORT=29500")));
}

TEST(LaunchEnvironmentTest, AStorePathReplacesTheMaster) {
  const absl::StatusOr<LaunchEnvironment> env =
      Read({{"RANK", "1"},
            {"WORLD_SIZE", "2"},
            {"KINDLING_STORE_PATH", "/shared/job-7"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->store_path, "/shared/job-7");
  EXPECT_EQ(env->master_port, 0);
  EXPECT_EQ(env->master_addr, "");
}

TEST(LaunchEnvironmentTest, MasterPortMustBeATcpPort) {
  for (const char* port : {"0", "65536", "-5"}) {
    Variables variables = TwoRanks();
    variables["MASTER_PORT"] = port;
    EXPECT_THAT(ErrorOf(variables), HasSubstr("MASTER_PORT must be a TCP port, "
                                              "1 to 65535"))
        << port;
  }
  Variables variables = TwoRanks();
  variables["MASTER_PORT"] = "65535";
  EXPECT_TRUE(Read(variables).ok());
}

TEST(LaunchEnvironmentTest, MpirunVariables) {
  absl::StatusOr<LaunchEnvironment> env =
      Read({{"OMPI_COMM_WORLD_RANK", "2"},
            {"OMPI_COMM_WORLD_SIZE", "4"},
            {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kMpirun);
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 0);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->master_addr, "");
  EXPECT_EQ(env->master_port, 0);
  EXPECT_EQ(env->ToString(),
            "rank 2 of 4 (local 0), no rendezvous store, launched by mpirun");
}

TEST(LaunchEnvironmentTest, MpirunWinsOverInheritedRank) {
  absl::StatusOr<LaunchEnvironment> env = Read({{"OMPI_COMM_WORLD_RANK", "1"},
                                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"RANK", "0"},
                                                {"WORLD_SIZE", "1"},
                                                {"MASTER_ADDR", "10.0.0.1"},
                                                {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kMpirun);
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->world_size, 2);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "10.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
}

TEST(LaunchEnvironmentTest, MpirunErrorsNameMpirunVariables) {
  EXPECT_THAT(ErrorOf({{"OMPI_COMM_WORLD_RANK", "0"}}),
              HasSubstr("OMPI_COMM_WORLD_SIZE is not"));
  EXPECT_THAT(
      ErrorOf({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
      HasSubstr("OMPI_COMM_WORLD_RANK=5 is not below OMPI_COMM_WORLD_SIZE=2"));
  EXPECT_THAT(ErrorOf({{"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"MASTER_PORT", "99999"}}),
              HasSubstr("MASTER_PORT must be a TCP port"));
}

TEST(LaunchEnvironmentTest, ReadsTheProcessEnvironment) {
  ASSERT_EQ(setenv("RANK", "0", 1), 0);
  ASSERT_EQ(setenv("WORLD_SIZE", "1", 1), 0);
  absl::StatusOr<LaunchEnvironment> env = ReadLaunchEnvironment();
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->launcher, Launcher::kEnvironment);
  EXPECT_EQ(env->world_size, 1);
}

}  // namespace
}  // namespace kindling::distributed
