// Kindling's own Conv2d kernels (backend/cpu/conv2d.cc) against oneDNN's
// (backend/cpu/onednn_conv2d.h: blocked layouts, reorders from and to NCHW
// included) on the example CNN's two layers at batch 128, f32, on the same
// operands, in alternating blocks of calls: what the CPU backend's dispatch
// in cpu_backend.cc is decided by.
//
//   conv1  1 -> 32 channels, 28 x 28, 3 x 3, padding 1 (the first layer:
//          its backward needs no input gradient)
//   conv2  32 -> 64 channels, 14 x 14, 3 x 3, padding 1
//
// Every layer runs through oneDNN here (KINDLING_ONEDNN=all), also where
// the backend keeps Kindling's kernel.
//
// Counters: kindling_ms and onednn_ms (medians over the iterations) and
// onednn_vs_kindling = onednn_ms / kindling_ms (< 1: oneDNN is faster).
//
//   taskset -c 0,1 bazel-bin/benches/conv_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "benchmark/benchmark.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr int64_t kBatch = 128;

struct Layer {
  int64_t in_channels, out_channels, side;
  bool input_grad;  // the backward computes the input's gradient
};

constexpr Layer kConv1{1, 32, 28, false};
constexpr Layer kConv2{32, 64, 14, true};

TensorBase Random(const Shape& shape, uint64_t seed) {
  PhiloxGenerator generator(seed);
  return ops::RandomNormal(shape, DType::kF32, Device::Cpu(), generator, 0, 1);
}

// Operands: one layer's tensors.
struct Operands {
  explicit Operands(const Layer& layer)
      : input(Random({kBatch, layer.in_channels, layer.side, layer.side}, 1)),
        weight(Random({layer.out_channels, layer.in_channels, 3, 3}, 2)),
        bias(Random({layer.out_channels}, 3)),
        grad(Random({kBatch, layer.out_channels, layer.side, layer.side}, 4)),
        out(TensorBase::Empty(grad.shape(), DType::kF32, Device::Cpu())),
        input_grad(
            layer.input_grad
                ? TensorBase::Empty(input.shape(), DType::kF32, Device::Cpu())
                : TensorBase()),
        weight_grad(
            TensorBase::Empty(weight.shape(), DType::kF32, Device::Cpu())),
        bias_grad(TensorBase::Empty(bias.shape(), DType::kF32, Device::Cpu())) {
  }

  TensorBase input, weight, bias, grad, out, input_grad, weight_grad, bias_grad;
  Window2dGeometry window{.kernel = {3, 3}, .padding = {1, 1}};
};

double Median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

// kBlock: calls of one side in a row; the first of each block is not timed,
// so neither side is measured in the caches the other just left (the
// blocked buffers oneDNN reorders into are as large as the activations).
constexpr int kBlock = 6;

// TimeBlock() appends the seconds of calls 2..kBlock of `call` to `seconds`.
template <class Call>
void TimeBlock(const Call& call, std::vector<double>& seconds) {
  call();
  for (int i = 1; i < kBlock; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
}

template <class Kindling, class OneDnn>
void Compare(benchmark::State& state, const Kindling& kindling,
             const OneDnn& onednn) {
  if (!onednn()) {  // builds oneDNN's plan
    state.SkipWithError("oneDNN does not take this convolution");
    return;
  }
  std::vector<double> ours, theirs;
  for (auto _ : state) {
    TimeBlock(kindling, ours);
    TimeBlock(onednn, theirs);
  }
  state.counters["kindling_ms"] = 1e3 * Median(ours);
  state.counters["onednn_ms"] = 1e3 * Median(theirs);
  state.counters["onednn_vs_kindling"] = Median(theirs) / Median(ours);
}

void BM_ConvForward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  Compare(
      state,
      [&] { cpu::Conv2dKernel(o.out, o.input, o.weight, o.bias, o.window); },
      [&] {
        return cpu::OneDnnConv2d(o.out, o.input, o.weight, o.bias, o.window);
      });
}

void BM_ConvBackward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  Compare(
      state,
      [&] {
        cpu::Conv2dBackwardKernel(o.input_grad, o.weight_grad, o.bias_grad,
                                  o.grad, o.input, o.weight, o.window);
      },
      [&] {
        return cpu::OneDnnConv2dBackward(o.input_grad, o.weight_grad,
                                         o.bias_grad, o.grad, o.input, o.weight,
                                         o.window);
      });
}

BENCHMARK_CAPTURE(BM_ConvForward, conv1, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ConvBackward, conv1, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ConvForward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_ConvBackward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  // Every layer through oneDNN, also those the backend leaves to Kindling's
  // kernel (backend/cpu/onednn_conv2d.h), so that each rule is measured.
  setenv("KINDLING_ONEDNN", "all", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
