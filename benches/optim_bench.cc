// Optimizer step cost on Burn's 312 MiB model shape (20 Linear layers,
// 1024->2048 then 19x 2048->2048, 81.8M f32 parameters), against its limits,
// all measured in the same run:
//
//   BM_AdamStep/L/W      one Optimizer::Step (Adam) over L layers of width W
//     ms_per_step         time of one step
//     ratio_vs_memcpy     step GB/s / memcpy GB/s. A step must read param,
//                         grad, exp_avg, exp_avg_sq and write param, exp_avg,
//                         exp_avg_sq: 7x the model's bytes. The peer is a
//                         memcpy of the model's bytes (1 read + 1 write)
//                         split over the step's threads (ParallelCopy: one
//                         thread's memcpy cannot reach the memory's
//                         bandwidth), timed after every step with the timer
//                         paused. 1.0 means the step runs at copy bandwidth.
//     allocs_per_step     tensor allocations per step after the first
//                         (MemoryStats). Goal 0.
//     peak_vs_4x_model    peak tracked tensor bytes / (4 x model bytes):
//                         parameters, gradients and two moments. Goal 1.0.
//     ratio_vs_torch      step time / torch.optim.Adam(lr=1e-3).step() on the
//     ratio_vs_torch113   same model with the same gradients, in today's
//                         PyTorch (tools/peers) and Debian's 1.13
//                         (benches/torch_peer.h), each in its fastest CPU
//                         implementation of fused, foreach and for-loop
//                         (torch_ops.py tries each and prints its choice),
//                         timed after every step with the timer paused. <= 1
//                         means Kindling's step is at least as fast.
//   BM_SgdMomentumStep/L/W  the same for SGD with momentum (5x the bytes:
//                         param, grad, buffer read; param, buffer written;
//                         peer torch.optim.SGD(lr=0.01, momentum=0.9)).
//   BM_RmsPropStep/L/W    RMSprop (5x the bytes: param, grad, square_avg
//                         read; param, square_avg written; peer
//                         torch.optim.RMSprop(lr=0.01)). Kindling's RMSprop
//                         is written with tensor ops (optim/rules.h), not a
//                         fused kernel: this measures what that costs.
//
//   tools/bazel run //benches:optim_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <cblas.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "benches/bench_models.kindling.h"
#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "kindling/autodiff/gradients.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/module/erased.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

using Model = bench::Deep;

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// MakeModel() builds and initializes L layers: 1024 -> W, then W -> W.
Model MakeModel(int layers, int64_t width) {
  Model model;
  for (int i = 0; i < layers; ++i) {
    const int64_t in = i == 0 ? 1024 : width;
    model.layers.push_back(nn::LinearConfig{in, width}.Init());
  }
  VisitParamsErased(model, [](const ParamView& param) {
    benchmark::DoNotOptimize(param.value().data());
  });
  return model;
}

// Gradients of 1e-3 for every parameter (the values do not change the cost).
Gradients MakeGradients(const Model& model) {
  Gradients grads;
  VisitParamsErased(model, [&](const ParamView& param) {
    TensorBase grad =
        TensorBase::Empty(param.lazy_shape(), DType::kF32, Device::Cpu());
    GetBackend(grad.device()).Fill(grad, 1e-3);
    grads.Set(param.id(), grad);
  });
  return grads;
}

int64_t ModelBytes(const Model& model) {
  int64_t bytes = 0;
  VisitParamsErased(model, [&](const ParamView& param) {
    bytes += param.lazy_shape().num_elements() * int64_t{sizeof(float)};
  });
  return bytes;
}

// ParallelCopy() copies `bytes` from `source` to `target` with memcpy, split
// into one contiguous piece per kernel thread, as the optimizer's step splits
// the model.
void ParallelCopy(const char* source, char* target, int64_t bytes) {
  constexpr int64_t kGrain = int64_t{1} << 20;
  cpu::ParallelFor(bytes, kGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(target + begin, source + begin, end - begin);
  });
}

// Steps `optimizer` on a fresh model, reporting the counters above.
// `passes` is how many times the step reads or writes the model's bytes.
// `torch_op` names the same step in benches/peers/torch_ops.py, without the
// "_<L>x<W>" suffix.
void MeasureStep(benchmark::State& state, Optimizer optimizer, int passes,
                 const std::string& torch_op) {
  const int layers = static_cast<int>(state.range(0));
  const int64_t width = state.range(1);
  bench::PeerSteps torch(
      torch_op + "_" + std::to_string(layers) + "x" + std::to_string(width),
      cpu::MaxThreads());
  ResetMemoryStats(Device::Cpu());
  const int64_t live_before = GetMemoryStats(Device::Cpu()).live_bytes;
  Model model = MakeModel(layers, width);
  const Gradients grads = MakeGradients(model);
  const int64_t model_bytes = ModelBytes(model);
  std::vector<char> source(model_bytes, 1);
  std::vector<char> target(model_bytes, 0);
  std::memcpy(target.data(), source.data(), model_bytes);  // fault pages in

  if (!optimizer.Step(model, grads).ok()) {
    state.SkipWithError("first step failed");
    return;
  }
  const int64_t allocations_before =
      GetMemoryStats(Device::Cpu()).allocation_count;
  double step_seconds = 0;
  double copy_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (!optimizer.Step(model, grads).ok()) {
      state.SkipWithError("step failed");
      return;
    }
    step_seconds += Seconds(std::chrono::steady_clock::now() - start);
    state.PauseTiming();
    const auto copy_start = std::chrono::steady_clock::now();
    ParallelCopy(source.data(), target.data(), model_bytes);
    benchmark::ClobberMemory();
    copy_seconds += Seconds(std::chrono::steady_clock::now() - copy_start);
    torch.Run();
    state.ResumeTiming();
  }
  const MemoryStats stats = GetMemoryStats(Device::Cpu());
  const double iterations = static_cast<double>(state.iterations());
  const double step_rate = passes * model_bytes * iterations / step_seconds;
  const double copy_rate = 2.0 * model_bytes * iterations / copy_seconds;
  state.counters["ms_per_step"] = 1e3 * step_seconds / iterations;
  state.counters["GB/s"] = step_rate / 1e9;
  state.counters["memcpy_GB/s"] = copy_rate / 1e9;
  state.counters["ratio_vs_memcpy"] = step_rate / copy_rate;
  state.counters["allocs_per_step"] =
      (stats.allocation_count - allocations_before) / iterations;
  state.counters["peak_vs_4x_model"] =
      static_cast<double>(stats.peak_live_bytes - live_before) /
      (4.0 * model_bytes);
  state.counters["model_MiB"] = model_bytes / double{1 << 20};
  torch.Report(state, step_seconds);
}

void BM_AdamStep(benchmark::State& state) {
  MeasureStep(state, *Optimizer::Adam({}), /*passes=*/7, "adam_step");
}
BENCHMARK(BM_AdamStep)
    ->Args({20, 2048})
    ->Args({2, 64})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_SgdMomentumStep(benchmark::State& state) {
  MeasureStep(state, *Optimizer::Sgd({.lr = 0.01, .momentum = 0.9}),
              /*passes=*/5, "sgd_momentum_step");
}
BENCHMARK(BM_SgdMomentumStep)
    ->Args({20, 2048})
    ->Args({2, 64})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_RmsPropStep(benchmark::State& state) {
  MeasureStep(state, *Optimizer::RmsProp({.lr = 0.01}), /*passes=*/5,
              "rmsprop_step");
}
BENCHMARK(BM_RmsPropStep)
    ->Args({20, 2048})
    ->Args({2, 64})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The gradient-norm kernel (Backend::AbsPowerSum, p = 2, clip_kernels.cc:
// exact f64 squares per fixed block, summed in f64) against OpenBLAS's
// cblas_snrm2 on the same 64 MiB of f32, both on the
// kernels' threads: snrm2 runs once per ParallelFor chunk and the partial
// norms combine as sqrt(sum of squares). Reports ms per norm of each and
// ratio_vs_openblas (Kindling's time / OpenBLAS's, in the same run).
void BM_GradientNorm(benchmark::State& state) {
  constexpr int64_t kCount = int64_t{16} << 20;
  std::vector<float> values(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    values[i] = 1e-3f * static_cast<float>((i * 7919) % 2001 - 1000);
  }
  const Tensor<1> tensor = Tensor<1>::FromData(values, {kCount});
  Backend& backend = GetBackend(Device::Cpu());
  double kindling_seconds = 0, openblas_seconds = 0;
  double kindling_norm = 0, openblas_norm = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    kindling_norm = std::sqrt(backend.AbsPowerSum(tensor.base(), 2));
    kindling_seconds += Seconds(std::chrono::steady_clock::now() - start);
    start = std::chrono::steady_clock::now();
    // One slot per chunk: ParallelFor makes at most count / grain + 1.
    std::vector<double> partial(kCount / cpu::kElementGrain + 1);
    std::atomic<int64_t> next{0};
    cpu::ParallelFor(
        kCount, cpu::kElementGrain, [&](int64_t begin, int64_t end) {
          const double norm = cblas_snrm2(static_cast<int>(end - begin),
                                          values.data() + begin, 1);
          partial[next.fetch_add(1)] = norm * norm;
        });
    double sum = 0;
    for (double p : partial) sum += p;
    openblas_norm = std::sqrt(sum);
    openblas_seconds += Seconds(std::chrono::steady_clock::now() - start);
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["kindling_ms"] = 1e3 * kindling_seconds / iterations;
  state.counters["openblas_ms"] = 1e3 * openblas_seconds / iterations;
  state.counters["ratio_vs_openblas"] = kindling_seconds / openblas_seconds;
  state.counters["relative_difference"] =
      std::fabs(kindling_norm - openblas_norm) / openblas_norm;
}
BENCHMARK(BM_GradientNorm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  return kindling::bench::PeerBenchmarkMain(argc, argv);
}
