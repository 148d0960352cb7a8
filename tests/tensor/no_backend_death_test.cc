// Without //runtime/kindling/backend/cpu in the link, creating a CPU tensor
// (which needs memory) or dispatching a CPU kernel aborts with a message
// saying what to link.
#include "gtest/gtest.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(NoBackendDeathTest, CpuTensorWithoutCpuBackendNamesTheTarget) {
  EXPECT_FALSE(HasDeviceMemory(DeviceKind::kCpu));
  EXPECT_DEATH(Tensor<1>::Zeros({2}),
               "no device memory registered for device cpu \\(link "
               "//runtime/kindling/backend/cpu\\)");
}

TEST(NoBackendDeathTest, CpuKernelsWithoutCpuBackendNameTheTarget) {
  EXPECT_FALSE(HasBackend(DeviceKind::kCpu));
  EXPECT_DEATH(GetBackend(Device::Cpu()),
               "no backend registered for device cpu \\(link "
               "//runtime/kindling/backend/cpu\\)");
}

}  // namespace
}  // namespace kindling
