// Forked workers run forward and Backward() at the same time on their own
// graphs (run under --config=tsan): nothing shared is mutated, and each gets
// the gradients a single thread computes.
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using TensorParam = Param<Tensor<2>>;

// One worker's step: its own graph over its own fork of the weights.
std::vector<double> GradientOf(const TensorParam& weight, const Tensor<2>& x) {
  const Tensor<0> loss = matmul(x, *weight).sigmoid().sum_dim(1).mean();
  int ready_calls = 0;
  BackwardOptions options;
  options.on_gradient_ready = [&](ParamId, const TensorBase&) {
    ++ready_calls;
  };
  const Gradients grads = Backward(loss, options);
  EXPECT_EQ(1, ready_calls);
  return testing::ToDoubles(*grads.Get(weight.id()));
}

TEST(ConcurrentBackwardTest, ForkedWorkersMatchASingleThread) {
  Generator generator(5);
  const TensorParam weight = TensorParam::Initialized(
      ParamId::New(),
      Tensor<2>::RandomNormal({6, 3}, generator).set_require_grad(true));
  const std::vector<Tensor<2>> inputs = {
      Tensor<2>::RandomNormal({4, 6}, generator),
      Tensor<2>::RandomNormal({4, 6}, generator)};
  std::vector<std::vector<double>> expected;
  for (const Tensor<2>& x : inputs) expected.push_back(GradientOf(weight, x));

  constexpr int kSteps = 50;
  std::vector<std::vector<double>> results(inputs.size());
  std::vector<std::thread> workers;
  for (size_t w = 0; w < inputs.size(); ++w) {
    workers.emplace_back([&, w] {
      const TensorParam fork = weight.fork(Device::Cpu());
      for (int step = 0; step < kSteps; ++step) {
        results[w] = GradientOf(fork, inputs[w]);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (size_t w = 0; w < inputs.size(); ++w) {
    EXPECT_EQ(expected[w], results[w]) << "worker " << w;
  }
}

TEST(ConcurrentBackwardTest, TwoThreadsShareARetainedGraph) {
  Generator generator(6);
  const auto w =
      Tensor<2>::RandomNormal({5, 5}, generator).set_require_grad(true);
  const Tensor<0> loss = matmul(w, w).tanh().sum();
  BackwardOptions options;
  options.retain_graph = true;  // nodes are then only read
  const std::vector<double> expected =
      testing::ToDoubles(*Backward(loss, options).Get(w.leaf_id()));
  std::vector<std::vector<double>> results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        results[t] =
            testing::ToDoubles(*Backward(loss, options).Get(w.leaf_id()));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(expected, results[0]);
  EXPECT_EQ(expected, results[1]);
}

}  // namespace
}  // namespace kindling
