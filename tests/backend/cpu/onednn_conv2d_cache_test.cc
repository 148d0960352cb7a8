// backend/cpu/onednn_conv2d.h's plan caches are bounded: past the bound, new
// shapes are declined (Kindling's kernel runs them) while shapes planned
// before still run. Its own binary: it fills the process-wide caches.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/tensor/tensor.h"

namespace kindling::cpu {
namespace {

// Runs a 1x1 convolution of [2, 2, 3, width] through oneDNN.
bool RunWidth(int64_t width) {
  const std::vector<float> input(2 * 2 * 3 * width, 1.0f), weight(2 * 2, 0.5f);
  const Device cpu = Device::Cpu();
  const TensorBase x =
      TensorBase::FromHost(input.data(), {2, 2, 3, width}, DType::kF32, cpu);
  const TensorBase w =
      TensorBase::FromHost(weight.data(), {2, 2, 1, 1}, DType::kF32, cpu);
  const TensorBase out = TensorBase::Empty({2, 2, 3, width}, DType::kF32, cpu);
  if (!OneDnnConv2d(out, x, w, TensorBase(), {.kernel = {1, 1}})) return false;
  std::vector<float> result(2 * 2 * 3 * width);
  out.CopyToHost(result.data());
  for (float value : result) EXPECT_EQ(value, 1.0f);  // 2 channels x 0.5
  return true;
}

TEST(OneDnnConv2dCacheTest, ShapesPastTheBoundGoToKindlingsKernel) {
  ASSERT_TRUE(RunWidth(1));
  int declined = 0;
  for (int64_t width = 2; width < 600; ++width) declined += !RunWidth(width);
  EXPECT_GT(declined, 0);
  EXPECT_TRUE(RunWidth(1));
}

}  // namespace
}  // namespace kindling::cpu
