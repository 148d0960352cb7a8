// Without //runtime/kindling/backend/cpu in the link, creating a CPU tensor
// aborts with a message saying what to link.
#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(NoBackendDeathTest, CpuTensorWithoutCpuBackendNamesTheTarget) {
  EXPECT_FALSE(HasBackend(DeviceKind::kCpu));
  EXPECT_DEATH(Tensor<1>::Zeros({2}),
               "no backend registered for device cpu \\(link "
               "//runtime/kindling/backend/cpu\\)");
}

}  // namespace
}  // namespace kindling
