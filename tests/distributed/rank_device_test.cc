// RankDevice: a bare "cuda" follows LOCAL_RANK; everything else is kept.
#include "kindling/distributed/rank_device.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/tensor/device.h"

namespace kindling::distributed {
namespace {

LaunchEnvironment LocalRank(int local_rank) {
  LaunchEnvironment launch;
  launch.rank = 4 + local_rank;  // the second machine of a 2 x 4 job
  launch.world_size = 8;
  launch.local_rank = local_rank;
  launch.local_world_size = 4;
  launch.launcher = LaunchEnvironment::Launcher::kEnvironment;
  return launch;
}

TEST(RankDevice, BareCudaIsTheLocalRanksGpu) {
  for (int local_rank = 0; local_rank < 4; ++local_rank) {
    absl::StatusOr<Device> device = RankDevice("cuda", LocalRank(local_rank));
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ(*device, Device::Cuda(local_rank));
  }
}

TEST(RankDevice, AloneBareCudaIsTheFirstGpu) {
  absl::StatusOr<Device> device = RankDevice("cuda", LaunchEnvironment{});
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(*device, Device::Cuda(0));
}

TEST(RankDevice, AnExplicitIndexAndTheCpuAreKept) {
  absl::StatusOr<Device> device = RankDevice("cuda:0", LocalRank(3));
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(*device, Device::Cuda(0));
  device = RankDevice("cuda:2", LocalRank(1));
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(*device, Device::Cuda(2));
  device = RankDevice("cpu", LocalRank(3));
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(*device, Device::Cpu());
}

TEST(RankDevice, ABadSpellingIsTheParsersError) {
  for (const char* text : {"", "gpu", "cuda:", "cuda:-1", "CUDA", "cuda "}) {
    absl::StatusOr<Device> device = RankDevice(text, LocalRank(1));
    EXPECT_TRUE(absl::IsInvalidArgument(device.status())) << text;
    EXPECT_THAT(device.status().message(),
                testing::HasSubstr("expected cpu, cuda or cuda:N"))
        << text;
  }
}

}  // namespace
}  // namespace kindling::distributed
