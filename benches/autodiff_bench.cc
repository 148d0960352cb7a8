// Autodiff overhead on an MLP-shaped stack (784-256-256-10, batch 128, f32,
// built from Tensor ops: matmul, bias add, relu, log_softmax, gather, mean).
//
//   BM_ForwardGradOn       forward recording the graph (loss dropped, graph
//                          freed). `on_vs_off`: its time / the same forward
//                          on weights that need no gradient (no metadata at
//                          all: what a build without autodiff runs).
//   BM_ForwardNoGradGuard  forward of require-grad weights inside a
//                          NoGradGuard. `guard_vs_plain`: its time / the
//                          no-metadata forward; the goal is 1.0.
//   BM_ForwardBackward     forward + Backward(). `vs_forward`: its time / the
//                          recording forward alone.
//   BM_FusedLinearRelu     forward + Backward() with the hidden layers as
//                          matmul_bias_relu (nn::Linear::ForwardRelu).
//                          `fused_vs_separate`: its time / matmul_bias then
//                          relu.
//
// BM_ForwardGradOn and BM_ForwardBackward also report `ratio_vs_torch` and
// `ratio_vs_torch113`: their time / the same forward (or forward + backward
// of every weight) in today's PyTorch (tools/peers) and Debian's 1.13, the
// same MLP written with the same ops (benches/peers/torch_ops.py
// mlp_forward, mlp_forward_backward; benches/torch_peer.h). <= 1 means
// Kindling is at least as fast.
//
// Both also report `ratio_vs_flop_limit`: their time / the time the MLP's
// products (kindling/nn/flop_count.h: forward, or forward + backward) take
// at the best f32 GEMM rate measured at the end of the benchmark
// (benches/flop_limit.h).
//
// Each ratio's peer runs interleaved with the op inside the same benchmark
// (one peer call after every iteration, timer paused), so both see the same
// machine load.
//
//   tools/bazel run //benches:autodiff_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "benches/flop_limit.h"
#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "kindling/autodiff/backward.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/nn/flop_count.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr int64_t kBatch = 128;

struct Mlp {
  Tensor<2> w1, w2, w3;
  Tensor<1> b1, b2, b3;

  Mlp WithRequireGrad(bool require_grad) const {
    return {
        w1.set_require_grad(require_grad), w2.set_require_grad(require_grad),
        w3.set_require_grad(require_grad), b1.set_require_grad(require_grad),
        b2.set_require_grad(require_grad), b3.set_require_grad(require_grad)};
  }
};

Mlp MakeMlp() {
  Generator generator(1);
  return {Tensor<2>::RandomNormal({784, 256}, generator, 0, 0.05),
          Tensor<2>::RandomNormal({256, 256}, generator, 0, 0.06),
          Tensor<2>::RandomNormal({256, 10}, generator, 0, 0.06),
          Tensor<1>::Zeros({256}),
          Tensor<1>::Zeros({256}),
          Tensor<1>::Zeros({10})};
}

struct Batch {
  Tensor<2> x;
  Tensor<2, Int> labels;  // [kBatch, 1]
};

Batch MakeBatch() {
  Generator generator(2);
  std::vector<int64_t> labels(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) labels[i] = i % 10;
  return {Tensor<2>::RandomNormal({kBatch, 784}, generator),
          Tensor<2, Int>::FromData<int64_t>(labels, {kBatch, 1})};
}

// The negative log-likelihood of the labels.
Tensor<0> Forward(const Mlp& mlp, const Batch& batch) {
  const Tensor<2> h1 = (matmul(batch.x, mlp.w1) + mlp.b1).relu();
  const Tensor<2> h2 = (matmul(h1, mlp.w2) + mlp.b2).relu();
  const Tensor<2> logits = matmul(h2, mlp.w3) + mlp.b3;
  return -gather(logits.log_softmax(1), 1, batch.labels).mean();
}

// The products of Forward() (the input x needs no gradient).
nn::Flops MlpFlops() {
  nn::Flops flops =
      nn::MatmulFlops(kBatch, 784, 256, nn::InputGradient::kNotNeeded);
  flops += nn::MatmulFlops(kBatch, 256, 256, nn::InputGradient::kNeeded);
  flops += nn::MatmulFlops(kBatch, 256, 10, nn::InputGradient::kNeeded);
  return flops;
}

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// Times `op` per iteration and `peer` once after each (timer paused), and
// reports op time / peer time as `counter`; with a `torch_op`, also the
// PyTorch peers' time of it (bench::PeerSteps), and with `flops` (per
// call) the ratio to the FLOP limit.
template <class Op, class Peer>
void RunWithPeer(benchmark::State& state, const char* counter, Op op, Peer peer,
                 const char* torch_op = nullptr, double flops = 0) {
  std::optional<bench::PeerSteps> torch;
  if (torch_op != nullptr) torch.emplace(torch_op, cpu::MaxThreads());
  std::chrono::steady_clock::duration op_time{}, peer_time{};
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    op();
    op_time += std::chrono::steady_clock::now() - start;
    state.PauseTiming();
    const auto peer_start = std::chrono::steady_clock::now();
    peer();
    peer_time += std::chrono::steady_clock::now() - peer_start;
    if (torch.has_value()) torch->Run();
    state.ResumeTiming();
  }
  state.counters[counter] = Seconds(op_time) / Seconds(peer_time);
  if (torch.has_value()) torch->Report(state, Seconds(op_time));
  if (flops > 0) {
    bench::ReportFlopLimit(state, flops * state.iterations(), Seconds(op_time),
                           bench::BestGemmRate());
  }
}

void BM_ForwardGradOn(benchmark::State& state) {
  const Mlp plain = MakeMlp();
  const Mlp trainable = plain.WithRequireGrad(true);
  const Batch batch = MakeBatch();
  RunWithPeer(
      state, "on_vs_off",
      [&] { benchmark::DoNotOptimize(Forward(trainable, batch)); },
      [&] { benchmark::DoNotOptimize(Forward(plain, batch)); }, "mlp_forward",
      MlpFlops().forward);
}
BENCHMARK(BM_ForwardGradOn)->Unit(benchmark::kMicrosecond);

void BM_ForwardNoGradGuard(benchmark::State& state) {
  const Mlp plain = MakeMlp();
  const Mlp trainable = plain.WithRequireGrad(true);
  const Batch batch = MakeBatch();
  RunWithPeer(
      state, "guard_vs_plain",
      [&] {
        NoGradGuard no_grad;
        benchmark::DoNotOptimize(Forward(trainable, batch));
      },
      [&] { benchmark::DoNotOptimize(Forward(plain, batch)); });
}
BENCHMARK(BM_ForwardNoGradGuard)->Unit(benchmark::kMicrosecond);

void BM_ForwardBackward(benchmark::State& state) {
  const Mlp trainable = MakeMlp().WithRequireGrad(true);
  const Batch batch = MakeBatch();
  RunWithPeer(
      state, "vs_forward",
      [&] {
        const Tensor<0> loss = Forward(trainable, batch);
        benchmark::DoNotOptimize(Backward(loss));
      },
      [&] { benchmark::DoNotOptimize(Forward(trainable, batch)); },
      "mlp_forward_backward", MlpFlops().total());
}
BENCHMARK(BM_ForwardBackward)->Unit(benchmark::kMicrosecond);

// The same MLP's forward + backward with each hidden layer as nn::Linear
// writes it: matmul_bias_relu (the ReLU fused into the product's slabs)
// against matmul_bias then relu, interleaved. `fused_vs_separate`: the fused
// layers' time / the separate ops'.
Tensor<0> LinearForward(const Mlp& mlp, const Batch& batch, bool fused) {
  const auto hidden = [fused](const Tensor<2>& x, const Tensor<2>& w,
                              const Tensor<1>& b) {
    return fused ? matmul_bias_relu(x, w, b) : matmul_bias(x, w, b).relu();
  };
  const Tensor<2> h1 = hidden(batch.x, mlp.w1, mlp.b1);
  const Tensor<2> h2 = hidden(h1, mlp.w2, mlp.b2);
  const Tensor<2> logits = matmul_bias(h2, mlp.w3, mlp.b3);
  return -gather(logits.log_softmax(1), 1, batch.labels).mean();
}

void BM_FusedLinearRelu(benchmark::State& state) {
  const Mlp trainable = MakeMlp().WithRequireGrad(true);
  const Batch batch = MakeBatch();
  RunWithPeer(
      state, "fused_vs_separate",
      [&] {
        benchmark::DoNotOptimize(
            Backward(LinearForward(trainable, batch, true)));
      },
      [&] {
        benchmark::DoNotOptimize(
            Backward(LinearForward(trainable, batch, false)));
      });
}
BENCHMARK(BM_FusedLinearRelu)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  return kindling::bench::PeerBenchmarkMain(argc, argv);
}
