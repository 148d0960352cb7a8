// A whole training step (forward, loss, Backward(), Adam step) on Burn's
// 312 MiB model shape: 20 Linear layers, 1024->2048 then 19x 2048->2048 with
// ReLU between them, 81.8M f32 parameters, cross-entropy over the 2048
// outputs. optim_bench times the optimizer step alone on the same model; this
// one asks what the step costs in memory once autodiff is in the loop.
//
//   BM_TrainStep/L/W/B    one step of L layers of width W on a batch of B
//     ms_per_step          time of one step (forward + backward + Adam)
//     ratio_vs_gemm        step time / the time of the step's GEMMs alone
//                          (20 forward, 19 input-gradient and 20
//                          weight-gradient products of the same shapes,
//                          through matmul() without autodiff), run after
//                          every step with the timer paused. The GEMMs are
//                          the FLOP limit; what is above 1.0 is everything
//                          else (bias, ReLU, loss, Adam, allocation).
//     allocs_per_step      tensor allocations per step after the first
//                          (MemoryStats::allocation_count). Every step
//                          allocates the same tensors (activations, their
//                          gradients, the parameter gradients), so the
//                          count must be the same each step: also reported
//                          as alloc_growth, last step's count minus the
//                          second step's (goal 0).
//     peak_vs_4x_model     peak live tensor bytes during the timed steps /
//                          (4 x model bytes): parameters, gradients and two
//                          Adam moments. 1.0 is the floor for Adam; what is
//                          above it is the activations and the gradients in
//                          flight.
//     activations_vs_model live tensor bytes the graph holds when the forward
//                          returns (saved activations, masks, logits) /
//                          model bytes.
//     peak_rss_vs_4x_model the process's peak resident set during the timed
//                          steps, above its resident set before the model was
//                          built, / (4 x model bytes). Includes the CPU
//                          allocator's cache of freed blocks and the page
//                          rounding of every block.
//
//   tools/bazel run //benches:train_step_bench -- --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "benches/bench_models.kindling.h"
#include "benchmark/benchmark.h"
#include "kindling/autodiff/backward.h"
#include "kindling/backend/cpu/cpu_allocator.h"
#include "kindling/module/erased.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
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

int64_t ModelBytes(const Model& model) {
  int64_t bytes = 0;
  VisitParamsErased(model, [&](const ParamView& param) {
    bytes += param.lazy_shape().num_elements() * int64_t{sizeof(float)};
  });
  return bytes;
}

struct Batch {
  Tensor<2> inputs;       // [B, 1024]
  Tensor<1, Int> labels;  // [B], in [0, W)
};

Batch MakeBatch(int64_t batch, int64_t width) {
  PhiloxGenerator generator(7);
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i) labels[i] = (i * 37) % width;
  return {Tensor<2>::RandomNormal({batch, 1024}, generator),
          Tensor<1, Int>::FromData<int64_t>(labels, {batch})};
}

// Forward() is the loss of `model` on `batch`: ReLU between the layers,
// cross-entropy on the last layer's outputs.
Tensor<0> Forward(const Model& model, const Batch& batch) {
  Tensor<2> hidden = batch.inputs;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    hidden = model.layers[i].Forward(hidden);
    if (i + 1 < model.layers.size()) hidden = hidden.relu();
  }
  return nn::CrossEntropy(hidden, batch.labels);
}

// ResidentBytes() reads VmRSS ("current") or VmHWM ("peak") of this process.
int64_t ResidentBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::stoll(line.substr(field.size() + 1)) * 1024;
    }
  }
  return -1;
}

// ResetPeakResident() sets VmHWM to the current VmRSS (Linux 4.0+), so a
// later peak covers only what runs after it. False when not supported.
bool ResetPeakResident() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5";
  clear_refs.flush();
  return clear_refs.good();
}

// StepGemms is the GEMM work of one step with autodiff out of the loop: the
// forward product of every layer, the input gradient of every layer but the
// first (its input needs none) and the weight gradient of every layer.
class StepGemms {
 public:
  StepGemms(const Model& model, int64_t batch) {
    PhiloxGenerator generator(11);
    for (const nn::Linear& layer : model.layers) {
      const Tensor<2> weight = layer.weight->detach();
      const int64_t in = weight.base().shape()[0];
      const int64_t out = weight.base().shape()[1];
      weights_.push_back(weight);
      inputs_.push_back(Tensor<2>::RandomNormal({batch, in}, generator));
      output_grads_.push_back(Tensor<2>::RandomNormal({batch, out}, generator));
    }
  }

  void Run() const {
    for (size_t i = 0; i < weights_.size(); ++i) {
      benchmark::DoNotOptimize(matmul(inputs_[i], weights_[i]));
      if (i > 0) {
        benchmark::DoNotOptimize(matmul(output_grads_[i], weights_[i].t()));
      }
      benchmark::DoNotOptimize(matmul(inputs_[i].t(), output_grads_[i]));
    }
  }

 private:
  std::vector<Tensor<2>> weights_, inputs_, output_grads_;
};

// One step; returns the tensor bytes the forward left live for Backward()
// (the graph's saved tensors and the loss).
int64_t Step(Model& model, const Batch& batch, Optimizer& optimizer,
             benchmark::State& state) {
  const int64_t live_before_forward = GetMemoryStats(Device::Cpu()).live_bytes;
  int64_t graph_bytes = 0;
  Gradients grads;
  {
    const Tensor<0> loss = Forward(model, batch);
    graph_bytes =
        GetMemoryStats(Device::Cpu()).live_bytes - live_before_forward;
    grads = Backward(loss);
  }
  if (!optimizer.Step(model, grads).ok()) state.SkipWithError("step failed");
  return graph_bytes;
}

void BM_TrainStep(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0));
  const int64_t width = state.range(1);
  const int64_t batch_size = state.range(2);
  // Each repetition starts with the allocator's cache empty, so the RSS
  // baseline does not already hold the previous repetition's blocks.
  cpu::TheCpuAllocator().EmptyCache();
  const int64_t rss_before = ResidentBytes("VmRSS");
  const int64_t live_before = GetMemoryStats(Device::Cpu()).live_bytes;
  Model model = MakeModel(layers, width);
  const int64_t model_bytes = ModelBytes(model);
  const Batch batch = MakeBatch(batch_size, width);
  Optimizer optimizer = *Optimizer::Adam({});

  // The first step creates the Adam moments; the second is the first steady
  // one, whose allocation count the last step's is compared against.
  Step(model, batch, optimizer, state);
  int64_t count = GetMemoryStats(Device::Cpu()).allocation_count;
  Step(model, batch, optimizer, state);
  const int64_t second_step_allocations =
      GetMemoryStats(Device::Cpu()).allocation_count - count;

  // The GEMM peer's operands stay live through the timed steps: their bytes
  // are taken out of both peaks.
  const int64_t live_before_gemms = GetMemoryStats(Device::Cpu()).live_bytes;
  const StepGemms gemms(model, batch_size);
  const int64_t gemm_bytes =
      GetMemoryStats(Device::Cpu()).live_bytes - live_before_gemms;
  gemms.Run();  // faults its buffers in before the peaks are reset
  ResetMemoryStats(Device::Cpu());
  const bool rss_peak_reset = ResetPeakResident();
  int64_t graph_bytes = 0;
  int64_t last_step_allocations = 0;
  int64_t step_allocations = 0;
  double step_seconds = 0;
  double gemm_seconds = 0;
  int64_t peak_bytes = 0;
  for (auto _ : state) {
    count = GetMemoryStats(Device::Cpu()).allocation_count;
    const auto start = std::chrono::steady_clock::now();
    graph_bytes = Step(model, batch, optimizer, state);
    step_seconds += Seconds(std::chrono::steady_clock::now() - start);
    const MemoryStats after_step = GetMemoryStats(Device::Cpu());
    last_step_allocations = after_step.allocation_count - count;
    step_allocations += last_step_allocations;
    peak_bytes = std::max(peak_bytes, after_step.peak_live_bytes);
    state.PauseTiming();
    const auto gemm_start = std::chrono::steady_clock::now();
    gemms.Run();
    gemm_seconds += Seconds(std::chrono::steady_clock::now() - gemm_start);
    ResetMemoryStats(Device::Cpu());  // the next peak is the next step's
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  const double four_x = 4.0 * model_bytes;
  state.counters["ms_per_step"] = 1e3 * step_seconds / iterations;
  state.counters["ratio_vs_gemm"] = step_seconds / gemm_seconds;
  state.counters["allocs_per_step"] = step_allocations / iterations;
  state.counters["alloc_growth"] =
      static_cast<double>(last_step_allocations - second_step_allocations);
  state.counters["peak_vs_4x_model"] =
      static_cast<double>(peak_bytes - gemm_bytes - live_before) / four_x;
  state.counters["activations_vs_model"] =
      static_cast<double>(graph_bytes) / model_bytes;
  if (rss_peak_reset) {
    state.counters["peak_rss_vs_4x_model"] =
        static_cast<double>(ResidentBytes("VmHWM") - gemm_bytes - rss_before) /
        four_x;
  }
  state.counters["model_MiB"] = model_bytes / double{1 << 20};
}
BENCHMARK(BM_TrainStep)
    ->Args({20, 2048, 128})
    ->Args({2, 64, 16})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kindling

BENCHMARK_MAIN();
