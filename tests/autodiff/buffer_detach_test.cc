// Buffers (BatchNorm's running statistics) hold detached values: updating one
// from activations that require grad keeps no graph alive, and reading one
// yields no gradient.
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/module/buffer.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(BufferDetachTest, UpdatesFromActivationsStoreDetachedValues) {
  const auto x = Tensor<1>::FromData<float>({1, 2}, {2}).set_require_grad(true);
  const Buffer<Tensor<1>> running(Tensor<1>::Zeros({2}).set_require_grad(true));
  EXPECT_FALSE(running.value().is_require_grad());
  const int64_t baseline = GetMemoryStats(Device::Cpu()).live_bytes;
  running.update_with([&](const Tensor<1>& current) {
    return current * 0.9 + (x * x).exp() * 0.1;
  });
  const Tensor<1> value = running.value();
  EXPECT_FALSE(value.is_require_grad());
  // Only the new value itself is alive, none of the graph's tensors.
  EXPECT_EQ(baseline + 2 * static_cast<int64_t>(sizeof(float)),
            GetMemoryStats(Device::Cpu()).live_bytes);
  running.update(x * 2.0);
  EXPECT_FALSE(running.value().is_require_grad());
  EXPECT_EQ((std::vector<float>{2, 4}), running.value().to_data<float>());
}

TEST(BufferDetachTest, ReadingABufferGivesItNoGradient) {
  const auto x = Tensor<1>::FromData<float>({1, 2}, {2}).set_require_grad(true);
  const Buffer<Tensor<1>> scale(Param<Tensor<1>>::Initialized(
      ParamId::New(), Tensor<1>::Ones({2}).set_require_grad(true)));
  const Gradients grads = Backward((x * scale.value()).sum());
  EXPECT_EQ(1u, grads.size());
  EXPECT_FALSE(grads.Get(scale.id()).has_value());
}

}  // namespace
}  // namespace kindling
