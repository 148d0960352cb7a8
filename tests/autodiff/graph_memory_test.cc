// The graph frees what it saved: after Backward() returns, and when a loss is
// dropped without backward, the tensor bytes come back to the baseline; and
// many training steps keep the live bytes flat.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

int64_t LiveBytes() { return GetMemoryStats(Device::Cpu()).live_bytes; }

struct Mlp {
  Tensor<2> w1, b1, w2;
};

Mlp MakeMlp(Generator& generator) {
  return {Tensor<2>::RandomNormal({16, 32}, generator).set_require_grad(true),
          Tensor<2>::Zeros({1, 32}).set_require_grad(true),
          Tensor<2>::RandomNormal({32, 4}, generator).set_require_grad(true)};
}

// A two-layer MLP's loss; every intermediate is referenced only by the graph
// once this returns.
Tensor<0> Loss(const Mlp& mlp, const Tensor<2>& x) {
  const Tensor<2> hidden = (matmul(x, mlp.w1) + mlp.b1).gelu();
  const Tensor<2> logits = matmul(hidden.slice(1, 0, 32), mlp.w2);
  return logits.log_softmax(1).narrow(1, 0, 1).mean().neg();
}

TEST(GraphMemoryTest, SavedTensorsAreFreedWhenBackwardReturns) {
  Generator generator(1);
  const Mlp mlp = MakeMlp(generator);
  const auto x = Tensor<2>::RandomNormal({8, 16}, generator);
  const int64_t baseline = LiveBytes();
  const Tensor<0> loss = Loss(mlp, x);
  const int64_t loss_bytes = loss.numel() * loss.base().element_size();
  EXPECT_GT(LiveBytes(), baseline + loss_bytes);  // the graph holds tensors
  {
    const Gradients grads = Backward(loss);
    EXPECT_EQ(3u, grads.size());
  }
  // The loss is still alive, its graph is not, and holds no bytes.
  EXPECT_TRUE(loss.is_require_grad());
  EXPECT_EQ(baseline + loss_bytes, LiveBytes());
}

TEST(GraphMemoryTest, DroppingALossWithoutBackwardFreesTheGraph) {
  Generator generator(2);
  const Mlp mlp = MakeMlp(generator);
  const auto x = Tensor<2>::RandomNormal({8, 16}, generator);
  const int64_t baseline = LiveBytes();
  {
    const Tensor<0> loss = Loss(mlp, x);
    EXPECT_GT(LiveBytes(), baseline);
  }
  EXPECT_EQ(baseline, LiveBytes());
}

TEST(GraphMemoryTest, RetainedGraphIsFreedWithTheLoss) {
  Generator generator(3);
  const Mlp mlp = MakeMlp(generator);
  const auto x = Tensor<2>::RandomNormal({8, 16}, generator);
  const int64_t baseline = LiveBytes();
  {
    const Tensor<0> loss = Loss(mlp, x);
    BackwardOptions options;
    options.retain_graph = true;
    { const Gradients grads = Backward(loss, options); }
    EXPECT_GT(LiveBytes(), baseline);  // kept for a second backward
  }
  EXPECT_EQ(baseline, LiveBytes());
}

TEST(GraphMemoryTest, TenThousandStepsKeepLiveBytesFlat) {
  Generator generator(4);
  Tensor<2> w = Tensor<2>::RandomNormal({4, 8}, generator) * 0.1;
  w = w.set_require_grad(true);
  const auto x = Tensor<2>::RandomNormal({2, 4}, generator);
  int64_t after_warmup = 0, at_last_step = 0;
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 10000; ++step) {
    // Measured at the top of a step, where only w and x are alive.
    if (step == 10) after_warmup = LiveBytes();
    if (step == 9999) at_last_step = LiveBytes();
    const Tensor<0> loss = (matmul(x, w).tanh() - 0.5).pow(2.0).mean();
    const Gradients grads = Backward(loss);
    const Tensor<2> grad(*grads.Get(w.leaf_id()));
    {
      NoGradGuard no_grad;  // an SGD step records nothing
      w = (w.detach() - grad * 0.05).set_require_grad(true);
    }
    if (step == 0) first_loss = loss.item<float>();
    if (step == 9999) last_loss = loss.item<float>();
  }
  EXPECT_EQ(after_warmup, at_last_step);
  EXPECT_LT(last_loss, first_loss);  // and it trained
}

TEST(GraphMemoryTest, DeepGraphsAreFreedAndRunWithoutRecursion) {
  // An unrolled loop of 200k ops: destroying or running it recursively
  // would overflow the stack.
  const auto x = Tensor<1>::FromData<float>({1}, {1}).set_require_grad(true);
  const int64_t baseline = LiveBytes();
  {
    Tensor<1> y = x;
    for (int i = 0; i < 100000; ++i) y = (y + 1.0) * 1.0;
    const Gradients grads = Backward(y.sum());
    EXPECT_EQ(1.0f, Tensor<1>(*grads.Get(x.leaf_id())).item<float>());
  }
  {
    Tensor<1> y = x;
    for (int i = 0; i < 200000; ++i) y = y + 1.0;
  }
  EXPECT_EQ(baseline, LiveBytes());
}

}  // namespace
}  // namespace kindling
