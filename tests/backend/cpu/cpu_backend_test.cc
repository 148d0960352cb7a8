// The CPU backend registers itself when linked, and its kernels agree with
// reference loops on sizes that cross the parallel threshold.
#include "kindling/backend/cpu/cpu_backend.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(CpuBackendTest, RegisteredByLinking) {
  EXPECT_TRUE(HasBackend(DeviceKind::kCpu));
  EXPECT_EQ("cpu", GetBackend(Device::Cpu()).name());
  EXPECT_FALSE(HasBackend(DeviceKind::kCuda));
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
