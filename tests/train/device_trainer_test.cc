// The Trainer with the model on a device, on the fake cuda device
// (tests/support/fake_cuda.h): its kernels are the CPU's, so a run on cuda:0
// must reproduce the CPU run bit for bit, losses, accuracy and weights.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/module/map.h"
#include "kindling/train/batch_device.h"
#include "kindling/train/classifier.h"
#include "tests/support/fake_cuda.h"
#include "tests/train/tiny_run.h"

namespace kindling::train {
namespace {

namespace test = train_test;

struct RunResult {
  std::vector<double> losses;
  double accuracy = 0;
  std::string weights;  // WeightsText of the trained model
  Device device;
};

// Trains the tiny model for one epoch (8 steps) on `device`, with checkpoints
// in `out_dir` when it is not empty.
RunResult TrainOn(const Device& device, const std::string& out_dir = "") {
  examples::Mlp model = ToDevice(test::TinyModel(1), device);
  Optimizer optimizer = test::TinyOptimizer();
  const data::ImageDataset dataset = test::TinyDataset(3);
  data::DataLoader loader(dataset, test::TinyLoaderOptions());
  RunResult result;
  ClassifierTrainer<examples::Mlp> trainer(
      model, optimizer, loader, dataset, test::TinyForward,
      {.epochs = 1,
       .out_dir = out_dir,
       .dropout_seed = 11,
       .eval_batch_size = 100,
       .progress = {.quiet = true},
       .on_step = [&](int64_t, double loss) {
         result.losses.push_back(loss);
       }});
  absl::StatusOr<TrainReport> report = trainer.Run();
  EXPECT_TRUE(report.ok()) << report.status();
  if (report.ok() && !report->epochs.empty()) {
    result.accuracy = report->epochs.back().metric("test_accuracy");
  }
  result.weights = test::WeightsText(model);
  result.device = model.fc1.weight->device();
  return result;
}

TEST(DeviceTrainerTest, TrainingOnTheDeviceMatchesTheCpuBitForBit) {
  const RunResult cpu = TrainOn(Device::Cpu());
  testing::ResetFakeCudaCounters();
  const RunResult device = TrainOn(Device::Cuda(0));
  ASSERT_EQ(8u, cpu.losses.size());
  EXPECT_EQ(cpu.losses, device.losses);
  EXPECT_EQ(cpu.accuracy, device.accuracy);
  EXPECT_EQ(cpu.weights, device.weights);
  EXPECT_EQ(Device::Cuda(0), device.device);
  // The steps ran on the device: its kernels did the work.
  EXPECT_GT(testing::GetFakeCudaCounters().kernel_calls, 100);
}

TEST(DeviceTrainerTest, CheckpointsFromTheDeviceResumeOnTheDevice) {
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR")) + "/device_resume";
  std::filesystem::remove_all(dir);
  const RunResult first = TrainOn(Device::Cuda(1), dir);
  // A fresh lazy model on the device takes the checkpoint (staged to the
  // device) and evaluates as the trained one did.
  examples::Mlp reloaded = ToDevice(test::TinyModel(99), Device::Cuda(1));
  Optimizer optimizer = test::TinyOptimizer();
  absl::StatusOr<TrainState> state =
      LoadLatestTrainingCheckpoint(dir, reloaded, optimizer);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(first.weights, test::WeightsText(reloaded));
  EXPECT_EQ(Device::Cuda(1), reloaded.fc1.weight->device());
  EXPECT_EQ(first.accuracy, EvaluateAccuracy(reloaded, test::TinyDataset(3),
                                             test::TinyForward, 100));
}

TEST(DeviceTrainerTest, BatchOnDeviceMovesImagesAndLabels) {
  const data::ImageDataset dataset = test::TinyDataset(3);
  data::DataLoader loader(dataset, test::TinyLoaderOptions());
  const std::optional<data::Batch> batch = loader.Next();
  ASSERT_TRUE(batch.has_value());
  const data::Batch moved = BatchOnDevice(*batch, Device::Cuda(0));
  EXPECT_EQ(Device::Cuda(0), moved.images.device());
  EXPECT_EQ(Device::Cuda(0), moved.labels.device());
  EXPECT_EQ(batch->images.to_data<float>(), moved.images.to_data<float>());
  EXPECT_EQ(batch->labels.to_data<int64_t>(), moved.labels.to_data<int64_t>());
  EXPECT_EQ(batch->index, moved.index);
}

TEST(DeviceTrainerTest, AModelOnTwoDevicesIsAClearError) {
  examples::Mlp model = test::TinyModel(1);
  model.fc1 = ToDevice(model.fc1, Device::Cuda(0));
  const absl::StatusOr<Device> device = ModelDevice(model);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(std::string::npos,
            device.status().message().find("several devices (cuda:0, cpu)"))
      << device.status();
  Optimizer optimizer = test::TinyOptimizer();
  const data::ImageDataset dataset = test::TinyDataset(3);
  data::DataLoader loader(dataset, test::TinyLoaderOptions());
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, dataset,
                                           test::TinyForward,
                                           {.progress = {.quiet = true}});
  const absl::StatusOr<TrainReport> report = trainer.Run();
  ASSERT_FALSE(report.ok());
  EXPECT_NE(std::string::npos, report.status().message().find("ToDevice"));
}

}  // namespace
}  // namespace kindling::train
