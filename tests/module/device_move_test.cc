// Moving modules between devices, tested on the fake cuda device
// (tests/support/fake_cuda.h): host memory posing as cuda:N, its copies
// counted by direction, its kernels the CPU's (so values are bit-identical).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/module/initializer.h"
#include "kindling/module/map.h"
#include "kindling/module/visit.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/grad_mode.h"
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
using kindling::Tensor;
using kindling::nn::ForwardMode;
using kindling::testing::GetFakeCudaCounters;
using kindling::testing::ResetFakeCudaCounters;

DeviceNet MakeNet() {
  kindling::SetInitSeed(1234);
  return DeviceNetConfig{}.Init();
}

TEST(DeviceMoveTest, ToDeviceRetargetsLazyParamsWithoutAllocating) {
  const DeviceNet cpu = MakeNet();
  const int64_t fake_live = GetFakeCudaCounters().live_bytes;
  kindling::ResetMemoryStats(Device::Cpu());
  const DeviceNet moved = kindling::ToDevice(cpu, Device::Cuda(1));
  EXPECT_EQ(std::vector<Device>{Device::Cuda(1)},
            kindling::Devices<Device>(moved));
  kindling::VisitParams(moved, [](std::string_view path, const auto& param) {
    EXPECT_FALSE(param.is_initialized()) << path;
  });
  kindling::VisitBuffers(moved, [](std::string_view path, const auto& buf) {
    EXPECT_FALSE(buf.is_initialized()) << path;
    EXPECT_EQ(Device::Cuda(1), buf.lazy_device()) << path;
  });
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
  EXPECT_EQ(fake_live, GetFakeCudaCounters().live_bytes);
}

TEST(DeviceMoveTest, LazyInitRunsOnTheDeviceAndStagesNothingOnTheHost) {
  const DeviceNet cpu = MakeNet();
  const DeviceNet moved = kindling::ToDevice(cpu, Device::Cuda(0));
  ResetFakeCudaCounters();
  kindling::ResetMemoryStats(Device::Cpu());
  kindling::ResetMemoryStats(Device::Cuda(0));
  // Initialize every parameter and buffer by reading its value handle only.
  kindling::VisitParams(moved, [](std::string_view, const auto& param) {
    EXPECT_EQ(Device::Cuda(0), param->device());
  });
  kindling::VisitBuffers(moved, [](std::string_view, const auto& buf) {
    EXPECT_EQ(Device::Cuda(0), buf.value().device());
  });
  const kindling::testing::FakeCudaCounters counters = GetFakeCudaCounters();
  EXPECT_EQ(0, counters.h2d_bytes);
  EXPECT_EQ(0, counters.h2d_copies);
  EXPECT_EQ(0, counters.d2h_bytes);
  EXPECT_GT(counters.kernel_calls, 0);  // FillRandom / Fill ran there
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
  EXPECT_EQ(LeafBytes(moved), GetMemoryStats(Device::Cuda(0)).peak_live_bytes);
  // Philox on the device draws what it draws on the CPU, for the same seed.
  ExpectSameValues(ReadLeaves(cpu), ReadLeaves(moved), Device::Cuda(0));
}

TEST(DeviceMoveTest, InitializedParamsCopyHostToDeviceOncePerTensor) {
  const DeviceNet cpu = MakeNet();
  const std::vector<LeafValue> expected = ReadLeaves(cpu);  // initializes
  ResetFakeCudaCounters();
  const DeviceNet moved = kindling::ToDevice(cpu, Device::Cuda(0));
  kindling::testing::FakeCudaCounters counters = GetFakeCudaCounters();
  EXPECT_EQ(LeafBytes(cpu), counters.h2d_bytes);
  EXPECT_EQ(static_cast<int64_t>(expected.size()), counters.h2d_copies);
  EXPECT_EQ(0, counters.kernel_calls);
  ExpectSameValues(expected, ReadLeaves(moved), Device::Cuda(0));

  // Back to the CPU: device-to-host, the same values.
  ResetFakeCudaCounters();
  const DeviceNet back = kindling::ToDevice(moved, Device::Cpu());
  counters = GetFakeCudaCounters();
  EXPECT_EQ(LeafBytes(cpu), counters.d2h_bytes);
  EXPECT_EQ(0, counters.h2d_bytes);
  ExpectSameValues(expected, ReadLeaves(back), Device::Cpu());
}

TEST(DeviceMoveTest, ToTheSameDeviceSharesStorage) {
  const DeviceNet moved = kindling::ToDevice(MakeNet(), Device::Cuda(0));
  const std::vector<LeafValue> expected = ReadLeaves(moved);
  ResetFakeCudaCounters();
  const DeviceNet again = kindling::ToDevice(moved, Device::Cuda(0));
  EXPECT_TRUE(again.fc1.weight->shares_storage_with(*moved.fc1.weight));
  const kindling::testing::FakeCudaCounters counters = GetFakeCudaCounters();
  EXPECT_EQ(0, counters.h2d_bytes + counters.d2h_bytes + counters.d2d_bytes);
  ExpectSameValues(expected, ReadLeaves(again), Device::Cuda(0));
}

TEST(DeviceMoveTest, BetweenTwoCudaDevices) {
  const DeviceNet on0 = kindling::ToDevice(MakeNet(), Device::Cuda(0));
  const std::vector<LeafValue> expected = ReadLeaves(on0);
  const DeviceNet on1 = kindling::ToDevice(on0, Device::Cuda(1));
  EXPECT_EQ(std::vector<Device>{Device::Cuda(1)},
            kindling::Devices<Device>(on1));
  ExpectSameValues(expected, ReadLeaves(on1), Device::Cuda(1));
}

// Fork() keeps its contract (one init run feeds the original and the fork,
// tests/module:module_test), so a lazy fork to the device initializes the
// original on its device and copies; ToDevice() is the way to initialize on
// the device.
TEST(DeviceMoveTest, ForkOfALazyModuleStaysLazyOnTheDevice) {
  const DeviceNet cpu = MakeNet();
  const DeviceNet fork = kindling::Fork(cpu, Device::Cuda(0));
  EXPECT_EQ(std::vector<Device>{Device::Cuda(0)},
            kindling::Devices<Device>(fork));
  EXPECT_FALSE(fork.fc1.weight.is_initialized());
  const std::vector<LeafValue> forked = ReadLeaves(fork);
  EXPECT_TRUE(cpu.fc1.weight.is_initialized());  // the one init run
  EXPECT_FALSE(fork.fc1.weight->shares_storage_with(*cpu.fc1.weight));
  ExpectSameValues(ReadLeaves(cpu), forked, Device::Cuda(0));
}

TEST(DeviceMoveTest, ForkOfAnInitializedModuleOwnsItsStorage) {
  const DeviceNet cpu = MakeNet();
  const std::vector<LeafValue> expected = ReadLeaves(cpu);
  const DeviceNet fork = kindling::Fork(cpu, Device::Cuda(0));
  ExpectSameValues(expected, ReadLeaves(fork), Device::Cuda(0));
  // Same device: a fork of the fork copies on the device.
  const DeviceNet fork2 = kindling::Fork(fork, Device::Cuda(0));
  EXPECT_FALSE(fork2.fc1.weight->shares_storage_with(*fork.fc1.weight));
  Tensor<2> weight = *fork2.fc1.weight;
  {
    const kindling::NoGradGuard no_grad;  // writing a leaf that requires grad
    weight.fill_(0.0);
  }
  EXPECT_EQ(expected[0].values, fork.fc1.weight->to_data<float>());
  ExpectSameValues(expected, ReadLeaves(cpu), Device::Cpu());
}

TEST(DeviceMoveTest, TrainedBuffersMoveWithTheModule) {
  const DeviceNet cpu = MakeNet();
  const auto x = Tensor<2>::Full({8, 12}, 0.25) +
                 Tensor<1>::Arange(0, 96).reshape<2>({8, 12}) * 0.01;
  (void)cpu.Forward(x, ForwardMode::kTraining);  // updates running stats
  const std::vector<LeafValue> expected = ReadLeaves(cpu);
  const DeviceNet moved = kindling::ToDevice(cpu, Device::Cuda(0));
  ExpectSameValues(expected, ReadLeaves(moved), Device::Cuda(0));
  EXPECT_NE(std::vector<float>(16, 0.0f), expected[6].values);  // running mean
  // Inference on the device uses the moved statistics: the CPU's result.
  const Tensor<2> y_cpu = cpu.Forward(x, ForwardMode::kInference);
  const Tensor<2> y_dev =
      moved.Forward(x.to_device(Device::Cuda(0)), ForwardMode::kInference);
  EXPECT_EQ(Device::Cuda(0), y_dev.device());
  EXPECT_EQ(y_cpu.to_data<float>(), y_dev.to_data<float>());
}

// One Adam step of `model` on a fixed batch (moved to the model's device).
void AdamStep(DeviceNet& model, kindling::Optimizer& optimizer) {
  const Device device = kindling::Devices<Device>(model).front();
  const auto x = (Tensor<1>::Arange(0, 96).reshape<2>({8, 12}) * 0.05 - 2.0)
                     .to_device(device);
  const auto labels =
      Tensor<1, kindling::Int>::FromData<int64_t>({0, 1, 2, 3, 3, 2, 1, 0}, {8})
          .to_device(device);
  const Tensor<0> loss = kindling::nn::CrossEntropy(
      model.Forward(x, ForwardMode::kTraining), labels);
  ASSERT_TRUE(optimizer.Step(model, kindling::Backward(loss)).ok());
}

TEST(DeviceMoveTest, OptimizerStateFollowsTheParamsDevice) {
  DeviceNet cpu = MakeNet();
  absl::StatusOr<kindling::Optimizer> cpu_adam =
      kindling::Optimizer::Adam({.lr = 1e-2});
  ASSERT_TRUE(cpu_adam.ok());
  AdamStep(cpu, *cpu_adam);
  // Continue on the device with a copy of the optimizer, and on the CPU.
  // (A copied optimizer shares its state tensors until they move: step the
  // device copy first, whose state then moves off the shared CPU tensors.)
  kindling::Optimizer dev_adam = *cpu_adam;
  DeviceNet dev = kindling::Fork(cpu, Device::Cuda(0));
  AdamStep(dev, dev_adam);
  AdamStep(cpu, *cpu_adam);
  const kindling::TensorBase* exp_avg =
      dev_adam.state_tensor(dev.fc1.weight.id(), "exp_avg");
  ASSERT_NE(nullptr, exp_avg);
  EXPECT_EQ(Device::Cuda(0), exp_avg->device());
  ExpectSameValues(ReadLeaves(cpu), ReadLeaves(dev), Device::Cuda(0));
}

TEST(DeviceMoveDeathTest, MixingDevicesInAnOpAbortsAtTheFrontEnd) {
  const DeviceNet moved = kindling::ToDevice(MakeNet(), Device::Cuda(0));
  const auto x = Tensor<2>::Zeros({2, 12});  // on the CPU
  EXPECT_DEATH((void)moved.Forward(x, ForwardMode::kInference),
               "tensors on different devices \\(cpu");
}

TEST(DeviceMoveDeathTest, ACpuTensorInACudaKernelAbortsInTheFake) {
  const auto dev = Tensor<1>::Zeros({4}, Device::Cuda(0));
  const auto cpu = Tensor<1>::Zeros({4});
  EXPECT_DEATH(
      kindling::GetBackend(Device::Cuda(0))
          .Binary(kindling::BinaryOp::kAdd, dev.base(), dev.base(), cpu.base()),
      "fake cuda: kernel Binary got .*cpu.*not on a cuda device");
  const auto other = Tensor<1>::Zeros({4}, Device::Cuda(1));
  EXPECT_DEATH(
      kindling::GetBackend(Device::Cuda(0)).Copy(dev.base(), other.base()),
      "fake cuda: kernel Copy got .*cuda:0.* together with .*cuda:1");
}

}  // namespace
