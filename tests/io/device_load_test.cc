// Loading records and checkpoints into a module on a device, tested on the
// fake cuda device (tests/support/fake_cuda.h), whose copy counters show what
// crossed from the host.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "kindling/io/module_file.h"
#include "kindling/io/options.h"
#include "kindling/module/initializer.h"
#include "kindling/module/map.h"
#include "kindling/module/record.h"
#include "kindling/module/visit.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"
#include "tests/support/device_leaves.h"
#include "tests/support/device_test_model.kindling.h"
#include "tests/support/fake_cuda.h"

namespace {

using devtest::DeviceNet;
using devtest::DeviceNetConfig;
using devtest::ExpectSameValues;
using devtest::LeafBytes;
using devtest::LeafValue;
using devtest::ReadLeaves;
using kindling::Device;
using kindling::GetMemoryStats;
using kindling::LoadOptions;
using kindling::SaveOptions;
using kindling::testing::GetFakeCudaCounters;
using kindling::testing::ResetFakeCudaCounters;

std::string TempPath(std::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + std::string(name);
}

// Large enough that every weight spans many staging chunks.
DeviceNet MakeNet(uint64_t seed, const Device& device = Device::Cpu()) {
  kindling::SetInitSeed(seed);
  return DeviceNetConfig{.d_input = 64, .d_hidden = 96, .d_output = 10}.Init(
      device);
}

// --- LoadRecord --------------------------------------------------------------

TEST(DeviceRecordTest, LoadRecordMovesCpuValuesToEachParamsDevice) {
  const DeviceNet cpu = MakeNet(1);
  const std::vector<LeafValue> expected = ReadLeaves(cpu);
  const auto record = kindling::IntoRecord(cpu);
  DeviceNet device_net = MakeNet(2, Device::Cuda(1));  // lazy on cuda:1
  ResetFakeCudaCounters();
  ASSERT_TRUE(kindling::LoadRecord(device_net, record).ok());
  EXPECT_FALSE(device_net.fc1.weight.lazy_device().is_cpu());
  EXPECT_EQ(LeafBytes(cpu), GetFakeCudaCounters().h2d_bytes);
  ExpectSameValues(expected, ReadLeaves(device_net), Device::Cuda(1));
  EXPECT_EQ(cpu.fc2.weight.id(), device_net.fc2.weight.id());
}

TEST(DeviceRecordTest, LoadRecordMovesDeviceValuesToTheCpu) {
  const DeviceNet on_device = MakeNet(3, Device::Cuda(0));
  const std::vector<LeafValue> expected = ReadLeaves(on_device);
  const auto record = kindling::IntoRecord(on_device);
  DeviceNet cpu = MakeNet(4);
  ASSERT_TRUE(kindling::LoadRecord(cpu, record).ok());
  ExpectSameValues(expected, ReadLeaves(cpu), Device::Cpu());
}

// --- LoadModule: checkpoints through the staging buffer ----------------------

// Loads `path` into a lazy CPU model and into a lazy cuda:0 model with a
// 1 KiB staging buffer; checks the host never held more than one chunk, no
// single host-to-device copy exceeded one, and the values match.
void ExpectStagedLoadMatchesCpu(const std::string& path,
                                LoadOptions options = {}) {
  DeviceNet cpu = MakeNet(5);
  ASSERT_TRUE(kindling::LoadModule(cpu, path, options).ok());
  const std::vector<LeafValue> expected = ReadLeaves(cpu);

  constexpr int64_t kStaging = 1024;
  options.device_staging_bytes = kStaging;
  DeviceNet device_net = MakeNet(6, Device::Cuda(0));
  ResetFakeCudaCounters();
  kindling::ResetMemoryStats(Device::Cpu());
  const int64_t host_before = GetMemoryStats(Device::Cpu()).live_bytes;
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(device_net, path, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const int64_t host_peak =
      GetMemoryStats(Device::Cpu()).peak_live_bytes - host_before;
  const kindling::testing::FakeCudaCounters counters = GetFakeCudaCounters();
  EXPECT_LE(host_peak, kStaging);
  EXPECT_LE(counters.max_h2d_copy_bytes, kStaging);
  EXPECT_EQ(LeafBytes(device_net), counters.h2d_bytes);  // each byte once
  EXPECT_EQ(0, counters.d2h_bytes);
  EXPECT_EQ(8, report->copied);
  EXPECT_EQ(0, report->borrowed);
  ExpectSameValues(expected, ReadLeaves(device_net), Device::Cuda(0));
}

TEST(DeviceLoadTest, F32CheckpointGoesFromTheMappingToTheDevice) {
  const std::string path = TempPath("device_f32.safetensors");
  ASSERT_TRUE(kindling::SaveModule(MakeNet(7), path).ok());
  ExpectStagedLoadMatchesCpu(path);
  // Same dtype: the chunks are copied from the mapped pages, nothing staged.
  DeviceNet device_net = MakeNet(8, Device::Cuda(0));
  kindling::ResetMemoryStats(Device::Cpu());
  ResetFakeCudaCounters();
  ASSERT_TRUE(kindling::LoadModule(device_net, path).ok());
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
  EXPECT_EQ(0, GetFakeCudaCounters().kernel_calls);  // no init, no fill
}

TEST(DeviceLoadTest, F16CheckpointConvertsInTheStagingBuffer) {
  const std::string path = TempPath("device_f16.safetensors");
  ASSERT_TRUE(kindling::SaveModule(MakeNet(9), path,
                                   {.precision = kindling::Precision::kF16})
                  .ok());
  ExpectStagedLoadMatchesCpu(path);
  // The staging buffer was used: one chunk, freed after the load.
  DeviceNet device_net = MakeNet(10, Device::Cuda(0));
  kindling::ResetMemoryStats(Device::Cpu());
  const int64_t host_before = GetMemoryStats(Device::Cpu()).live_bytes;
  ASSERT_TRUE(
      kindling::LoadModule(device_net, path, {.device_staging_bytes = 1024})
          .ok());
  EXPECT_EQ(1024, GetMemoryStats(Device::Cpu()).peak_live_bytes - host_before);
  EXPECT_EQ(host_before, GetMemoryStats(Device::Cpu()).live_bytes);
}

TEST(DeviceLoadTest, Bf16CheckpointConvertsInTheStagingBuffer) {
  const std::string path = TempPath("device_bf16.safetensors");
  ASSERT_TRUE(kindling::SaveModule(MakeNet(11), path,
                                   {.precision = kindling::Precision::kBF16})
                  .ok());
  ExpectStagedLoadMatchesCpu(path);
}

TEST(DeviceLoadTest, PyTorchLayoutIsTransposedOnTheDevice) {
  const std::string path = TempPath("device_torch.safetensors");
  SaveOptions save;
  save.pytorch = kindling::PyTorchAdapter{};
  ASSERT_TRUE(kindling::SaveModule(MakeNet(12), path, save).ok());
  LoadOptions load;
  load.pytorch = kindling::PyTorchAdapter{};
  ExpectStagedLoadMatchesCpu(path, load);
}

TEST(DeviceLoadTest, AFailedLoadLeavesTheDeviceModuleUntouched) {
  const std::string path = TempPath("device_wrong_shape.safetensors");
  kindling::SetInitSeed(13);
  ASSERT_TRUE(
      kindling::SaveModule(DeviceNetConfig{.d_input = 5}.Init(), path).ok());
  DeviceNet device_net = MakeNet(14, Device::Cuda(0));
  ResetFakeCudaCounters();
  const absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(device_net, path);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(std::string::npos, report.status().message().find("fc1.weight"));
  EXPECT_FALSE(device_net.fc1.weight.is_initialized());
  EXPECT_EQ(0, GetFakeCudaCounters().h2d_bytes);
}

}  // namespace
