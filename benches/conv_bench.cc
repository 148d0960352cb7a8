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
// BM_PooledConvForward / BM_PooledConvBackward: conv2 and its pool as two
// ops against the pooled convolution (see below).
//
// BM_WinogradForward / BM_WinogradBackward: conv2 pooled as the example
// CNN runs it (OneDnnConv2dMaxPool and its backward, the weights' gradient
// included), with winograd_conv3x3.h off (oneDNN's direct kernel) against
// on. Where the CPU has AVX-512, oneDNN's layouts are nChw16c, the Winograd
// of winograd_conv3x3.h never runs and both sides are the same.
//
// BM_MaxPoolBackward: max pooling's backward on the two pools of the CNN,
// against memcpy (see below).
//
// BM_ConvChain: both layers pooled, forward and backward, as the example
// CNN chains them, with blocked copies (backend/cpu/blocked_copy.h) off
// against on (see below). The other benchmarks run with them off, so that
// each call reorders its input as a call on a fresh input does.
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
#include <cstring>
#include <string>
#include <vector>

#include "benches/median.h"
#include "benchmark/benchmark.h"
#include "kindling/backend/cpu/blocked_copy.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

using bench::Median;

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

// Sides: the counters' names of a comparison, `second`_vs_`first` the ratio
// of the second side's median to the first's.
struct Sides {
  const char* first;
  const char* second;
};

// Compare() times `first` and `second` in alternating blocks; `second`
// returns false where its path declines the work.
template <class First, class Second>
void Compare(benchmark::State& state, const First& first, const Second& second,
             Sides sides = {"kindling", "onednn"}) {
  cpu::SetBlockedCopies(false);
  if (!second()) {  // builds oneDNN's plan
    state.SkipWithError("oneDNN does not take this convolution");
    return;
  }
  std::vector<double> firsts, seconds;
  for (auto _ : state) {
    TimeBlock(first, firsts);
    TimeBlock(second, seconds);
  }
  const std::string a = sides.first, b = sides.second;
  state.counters[a + "_ms"] = 1e3 * Median(firsts);
  state.counters[b + "_ms"] = 1e3 * Median(seconds);
  state.counters[b + "_vs_" + a] = Median(seconds) / Median(firsts);
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

// The pooled convolution (backend/cpu/blocked_max_pool.h): conv2 and the
// 2x2 max pool with its fused ReLU after it as the example CNN runs them,
// the two ops one after the other (oneDNN's convolution, its output
// reordered to NCHW, then Kindling's pool) against oneDNN's convolution
// pooled in its own blocked layout; the backward likewise from the pooled
// gradient. pooled_vs_separate < 1: the fused op is faster.
struct Pooled {
  explicit Pooled(const Operands& o)
      : shape{kBatch, o.out.shape()[1], o.out.shape()[2] / 2,
              o.out.shape()[3] / 2},
        out(TensorBase::Empty(shape, DType::kF32, Device::Cpu())),
        argmax(TensorBase::Empty(shape, DType::kI64, Device::Cpu())),
        grad(Random(shape, 7)) {}

  Shape shape;
  TensorBase out, argmax, grad;
  Window2dGeometry window{.kernel = {2, 2}, .stride = {2, 2}};
};

void BM_PooledConvForward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  const Pooled p(o);
  Compare(
      state,
      [&] {
        cpu::OneDnnConv2d(o.out, o.input, o.weight, o.bias, o.window);
        cpu::MaxPool2dKernel(p.out, p.argmax, o.out, p.window,
                             PoolActivation::kRelu);
      },
      [&] {
        return cpu::OneDnnConv2dMaxPool(p.out, p.argmax, o.input, o.weight,
                                        o.bias, o.window, p.window,
                                        PoolActivation::kRelu);
      },
      {"separate", "pooled"});
}

void BM_PooledConvBackward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  const Pooled p(o);
  cpu::OneDnnConv2d(o.out, o.input, o.weight, o.bias, o.window);
  cpu::MaxPool2dKernel(p.out, p.argmax, o.out, p.window, PoolActivation::kRelu);
  Compare(
      state,
      [&] {
        cpu::MaxPool2dBackwardKernel(o.grad, p.grad, p.argmax, p.window);
        cpu::OneDnnConv2dBackward(o.input_grad, o.weight_grad, o.bias_grad,
                                  o.grad, o.input, o.weight, o.window);
      },
      [&] {
        return cpu::OneDnnConv2dMaxPoolBackward(
            o.input_grad, o.weight_grad, o.bias_grad, p.grad, p.argmax, o.input,
            o.weight, o.window, p.window);
      },
      {"separate", "pooled"});
}

// winograd_vs_direct < 1: winograd_conv3x3.h is faster than oneDNN's direct
// AVX2 kernel on the pooled conv2.
void BM_WinogradForward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  const Pooled p(o);
  auto pooled = [&](bool winograd) {
    cpu::SetWinogradConv3x3(winograd);
    return cpu::OneDnnConv2dMaxPool(p.out, p.argmax, o.input, o.weight, o.bias,
                                    o.window, p.window, PoolActivation::kRelu);
  };
  Compare(
      state, [&] { pooled(false); }, [&] { return pooled(true); },
      {"direct", "winograd"});
  cpu::SetWinogradConv3x3(true);
}

void BM_WinogradBackward(benchmark::State& state, const Layer& layer) {
  const Operands o(layer);
  const Pooled p(o);
  cpu::OneDnnConv2dMaxPool(p.out, p.argmax, o.input, o.weight, o.bias, o.window,
                           p.window, PoolActivation::kRelu);
  auto backward = [&](bool winograd) {
    cpu::SetWinogradConv3x3(winograd);
    return cpu::OneDnnConv2dMaxPoolBackward(
        o.input_grad, o.weight_grad, o.bias_grad, p.grad, p.argmax, o.input,
        o.weight, o.window, p.window);
  };
  Compare(
      state, [&] { backward(false); }, [&] { return backward(true); },
      {"direct", "winograd"});
  cpu::SetWinogradConv3x3(true);
}

// Max pooling's backward after each of the CNN's convolutions (2x2 at
// stride 2 over the layer's output, with the fused ReLU's argmax, as the
// example runs them: about half the windows route no gradient), against a
// memcpy of as many bytes as
// it moves (the gradient and argmax read, the input gradient written),
// alternating: pool_GB/s counts those bytes once, memcpy_GB/s its reads and
// writes, and ratio_vs_memcpy = pool_GB/s / memcpy_GB/s.
void BM_MaxPoolBackward(benchmark::State& state, const Layer& layer) {
  const TensorBase input =
      Random({kBatch, layer.out_channels, layer.side, layer.side}, /*seed=*/5);
  const Window2dGeometry window{.kernel = {2, 2}, .stride = {2, 2}};
  const Shape pooled{kBatch, layer.out_channels, layer.side / 2,
                     layer.side / 2};
  const TensorBase out = TensorBase::Empty(pooled, DType::kF32, Device::Cpu());
  const TensorBase argmax =
      TensorBase::Empty(pooled, DType::kI64, Device::Cpu());
  cpu::MaxPool2dKernel(out, argmax, input, window, PoolActivation::kRelu);
  const TensorBase grad = Random(pooled, /*seed=*/6);
  const TensorBase input_grad =
      TensorBase::Empty(input.shape(), DType::kF32, Device::Cpu());
  const size_t bytes = static_cast<size_t>(
      grad.numel() * 4 + argmax.numel() * 8 + input_grad.numel() * 4);
  std::vector<char> source(bytes, 1), target(bytes, 0);
  std::vector<double> ours, copies;
  for (auto _ : state) {
    TimeBlock(
        [&] { cpu::MaxPool2dBackwardKernel(input_grad, grad, argmax, window); },
        ours);
    TimeBlock([&] { std::memcpy(target.data(), source.data(), bytes); },
              copies);
  }
  const double pool_rate = bytes / Median(ours) / 1e9;
  const double memcpy_rate = 2.0 * bytes / Median(copies) / 1e9;
  state.counters["kindling_ms"] = 1e3 * Median(ours);
  state.counters["pool_GB/s"] = pool_rate;
  state.counters["memcpy_GB/s"] = memcpy_rate;
  state.counters["ratio_vs_memcpy"] = pool_rate / memcpy_rate;
}

// The chain of the example CNN's convolutions, each pooled with its ReLU
// (as Backend::Conv2dMaxPool runs them): conv1 on Kindling's kernel, conv2
// on oneDNN's or winograd_conv3x3.h's, forward then backward from a random
// pooled gradient, on fresh output tensors each call as a training step
// allocates them. `reordered`: blocked copies off, conv2 reorders its input
// into its blocked layout in the forward and again in the backward, and its
// input's gradient out of it; `chained`: on, conv1 writes conv2's input in that
// layout and reads the gradient from it. chained_vs_reordered < 1: the
// chain is faster.
void BM_ConvChain(benchmark::State& state) {
  const Operands o1(kConv1), o2(kConv2);
  const Window2dGeometry pool{.kernel = {2, 2}, .stride = {2, 2}};
  const TensorBase grad2 = Random({kBatch, 64, 7, 7}, 8);
  auto empty = [](const Shape& shape, DType dtype = DType::kF32) {
    return TensorBase::Empty(shape, dtype, Device::Cpu());
  };
  auto step = [&](bool chained) {
    cpu::SetBlockedCopies(chained);
    const TensorBase out1 = empty({kBatch, 32, 14, 14});
    const TensorBase argmax1 = empty(out1.shape(), DType::kU8);
    const TensorBase out2 = empty(grad2.shape());
    const TensorBase argmax2 = empty(grad2.shape(), DType::kU8);
    const TensorBase grad1 = empty(out1.shape());
    // The kernels the CPU backend picks for the two layers (this binary's
    // KINDLING_ONEDNN=all would send conv1 to oneDNN too).
    return cpu::Conv2dMaxPoolKernel(out1, argmax1, o1.input, o1.weight, o1.bias,
                                    o1.window, pool, PoolActivation::kRelu) &&
           cpu::OneDnnConv2dMaxPool(out2, argmax2, out1, o2.weight, o2.bias,
                                    o2.window, pool, PoolActivation::kRelu) &&
           cpu::OneDnnConv2dMaxPoolBackward(grad1, o2.weight_grad, o2.bias_grad,
                                            grad2, argmax2, out1, o2.weight,
                                            o2.window, pool) &&
           cpu::Conv2dMaxPoolBackwardKernel(
               TensorBase(), o1.weight_grad, o1.bias_grad, grad1, argmax1,
               o1.input, TensorBase(), o1.window, pool);
  };
  step(true);  // the layers learn which layouts their neighbours read
  Compare(
      state, [&] { step(false); }, [&] { return step(true); },
      {"reordered", "chained"});
  cpu::SetBlockedCopies(true);
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
BENCHMARK_CAPTURE(BM_PooledConvForward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_PooledConvBackward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WinogradForward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_WinogradBackward, conv2, kConv2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ConvChain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_MaxPoolBackward, after_conv1, kConv1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_MaxPoolBackward, after_conv2, kConv2)
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
