// Causal scaled-dot-product attention at T = 128, 512 and 2048 (batch 4, 4
// heads of 32: char_lm's width), forward + backward (BM_*Attention) and the
// forward alone without a graph (BM_*AttentionForward): the fused kernel
// (nn/fused_attention.h) and the composed tensor ops, against torch in the
// same run (torch 2.x's fused F.scaled_dot_product_attention; 1.13, which
// has none, composed), with the same thread count.
//
// Counters: ms per call, ratio_vs_<peer> (Kindling's time over
// the peer's: < 1 is faster), peak_MiB (Kindling's peak tensor bytes above
// the inputs during the call) and peak_vs_weights (that peak over one
// [B, H, T, T] f32 weight matrix, what a composed attention holds at least
// once); for each torch peer <label>_peak_MiB (the resident memory one call
// adds at its peak, measured in a process of its own: torch_ops.py
// --peak-bytes) and peak_vs_<label> (Kindling's peak over the peer's).
#include <chrono>
#include <cstdint>
#include <string>

#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "kindling/autodiff/backward.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/nn/attention.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr int64_t kBatch = 4, kHeads = 4, kHeadDim = 32;

Tensor<4> Input(int64_t length, uint64_t seed) {
  PhiloxGenerator generator(seed);
  return Tensor<4>(ops::RandomNormal({kBatch, kHeads, length, kHeadDim},
                                     DType::kF32, Device::Cpu(), generator, 0,
                                     1))
      .set_require_grad(true);
}

enum class Pass { kForward, kForwardBackward };

template <class Attention>
void Measure(benchmark::State& state, Pass pass, const Attention& attention) {
  const int64_t length = state.range(0);
  const std::string op =
      std::string(pass == Pass::kForward ? "attention_forward_"
                                         : "attention_") +
      std::to_string(length);
  bench::PeerSteps torch(op, cpu::MaxThreads());
  const Tensor<4> q = Input(length, 1), k = Input(length, 2),
                  v = Input(length, 3);
  double seconds = 0;
  int64_t peak = 0;
  for (auto _ : state) {
    ResetMemoryStats(Device::Cpu());
    const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
    const auto start = std::chrono::steady_clock::now();
    if (pass == Pass::kForward) {
      NoGradGuard no_grad;
      const Tensor<4> out = attention(q, k, v);
      benchmark::DoNotOptimize(out);
    } else {
      const Gradients grads = Backward(attention(q, k, v).sum());
      benchmark::DoNotOptimize(grads);
    }
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    peak = GetMemoryStats(Device::Cpu()).peak_live_bytes - before;
    state.PauseTiming();
    torch.Run();
    state.ResumeTiming();
  }
  const double weights = 4.0 * kBatch * kHeads * length * length;
  state.counters["ms"] = 1e3 * seconds / state.iterations();
  state.counters["peak_MiB"] = peak / double{1 << 20};
  state.counters["peak_vs_weights"] = peak / weights;
  torch.Report(state, seconds);
  bench::ReportPeerPeakMemory(state, op, cpu::MaxThreads(), peak);
}

Tensor<4> Fused(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v) {
  return nn::ScaledDotProductAttention(q, k, v, {.causal = true});
}

Tensor<4> Composed(const Tensor<4>& q, const Tensor<4>& k, const Tensor<4>& v) {
  return nn::ComposedAttention(q, k, v, {.causal = true});
}

void BM_FusedAttention(benchmark::State& state) {
  Measure(state, Pass::kForwardBackward, Fused);
}
void BM_ComposedAttention(benchmark::State& state) {
  Measure(state, Pass::kForwardBackward, Composed);
}
void BM_FusedAttentionForward(benchmark::State& state) {
  Measure(state, Pass::kForward, Fused);
}
void BM_ComposedAttentionForward(benchmark::State& state) {
  Measure(state, Pass::kForward, Composed);
}

#define KINDLING_ATTENTION_LENGTHS(bench) \
  BENCHMARK(bench)                        \
      ->Arg(128)                          \
      ->Arg(512)                          \
      ->Arg(2048)                         \
      ->Unit(benchmark::kMillisecond)     \
      ->UseRealTime()
KINDLING_ATTENTION_LENGTHS(BM_FusedAttention);
KINDLING_ATTENTION_LENGTHS(BM_ComposedAttention);
KINDLING_ATTENTION_LENGTHS(BM_FusedAttentionForward);
KINDLING_ATTENTION_LENGTHS(BM_ComposedAttentionForward);

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  return kindling::bench::PeerBenchmarkMain(argc, argv);
}
