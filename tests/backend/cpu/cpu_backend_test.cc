// The CPU backend registers itself when linked, and its kernels agree with
// reference loops on sizes that cross the parallel threshold.
#include "kindling/backend/cpu/cpu_backend.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(CpuBackendTest, RegisteredByLinking) {
  EXPECT_TRUE(HasBackend(DeviceKind::kCpu));
  EXPECT_EQ("cpu", GetBackend(Device::Cpu()).name());
  EXPECT_FALSE(HasBackend(DeviceKind::kCuda));
}

TEST(CpuBackendTest, MemoryRegisteredByLinking) {
  EXPECT_TRUE(HasDeviceMemory(DeviceKind::kCpu));
  EXPECT_FALSE(HasDeviceMemory(DeviceKind::kCuda));
}

TEST(CpuBackendTest, DeviceMemoryCopiesBytesBothWaysAndWithin) {
  DeviceMemory& memory = GetDeviceMemory(Device::Cpu());
  const std::vector<uint8_t> source = {1, 2, 3, 250, 0, 7, 9};
  const size_t nbytes = source.size();
  void* first = memory.Allocate(Device::Cpu(), nbytes);
  void* second = memory.Allocate(Device::Cpu(), nbytes);
  EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(first) % 64);
  memory.CopyHostToDevice(Device::Cpu(), first, source.data(), nbytes);
  memory.CopyDeviceToDevice(Device::Cpu(), second, first, nbytes);
  std::vector<uint8_t> back(nbytes);
  memory.CopyDeviceToHost(Device::Cpu(), back.data(), second, nbytes);
  EXPECT_EQ(source, back);
  memory.Deallocate(Device::Cpu(), first, nbytes);
  memory.Deallocate(Device::Cpu(), second, nbytes);
}

TEST(CpuBackendTest, StridedTensorCopiesToHostInRowMajorOrder) {
  const auto t =
      Tensor<2>::FromData<float>({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1);
  EXPECT_EQ((std::vector<float>{1, 4, 2, 5, 3, 6}), t.to_data<float>());
}

TEST(CpuBackendTest, RegisteringAgainIsHarmless) {
  cpu::RegisterCpuBackend();
  EXPECT_EQ((std::vector<float>{2}),
            (Tensor<1>::Ones({1}) * 2.0).to_data<float>());
}

TEST(CpuBackendTest, LargeUnaryAcrossThreadsMatchesReference) {
  const int n = 300001;  // odd, above the transcendental grain
  Generator generator(11);
  const auto x = Tensor<1>::RandomNormal({n}, generator);
  const auto y = x.exp().to_data<float>();
  const auto xs = x.to_data<float>();
  for (int i = 0; i < n; i += 997) EXPECT_FLOAT_EQ(std::exp(xs[i]), y[i]);
}

TEST(CpuBackendTest, LargeColumnSumAcrossThreads) {
  const auto t = Tensor<1>::Ones({512 * 300}).reshape<2>({512, 300});
  const auto column = t.sum_dim(0).to_data<float>();
  for (float v : column) ASSERT_EQ(512.0f, v);
  const auto row = t.sum_dim(1).to_data<float>();
  for (float v : row) ASSERT_EQ(300.0f, v);
}

TEST(CpuBackendTest, LargeSoftmaxRowsSumToOne) {
  Generator generator(12);
  const auto x = Tensor<2>::RandomNormal({256, 1000}, generator, 0, 10);
  const auto sums = x.softmax(1).sum_dim(1).to_data<float>();
  for (float v : sums) ASSERT_NEAR(1.0f, v, 1e-5);
}

}  // namespace
}  // namespace kindling
