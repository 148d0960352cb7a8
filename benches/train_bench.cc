// Training throughput against PyTorch: one epoch of Fashion-MNIST, batch 128,
// Adam 1e-3, in Kindling and in PyTorch 1.13 (benches/peers/train_torch.py,
// 2 threads) on the same data order, run back to back in each repetition,
// for the MLP 784-256-256-256-LayerNorm-10 (examples/mlp.h) and the CNN
// conv32-pool-conv64-pool-fc128-fc10 (examples/cnn.h).
//
//   tools/bazel run //benches:train_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one command line)
//
// Counters: kindling_epoch_s and torch_epoch_s (seconds per epoch),
// ratio_vs_torch = kindling / torch (goals: MLP <= 0.5, CNN <= 0.7), and the
// peak RSS of each process in MiB (Kindling's includes the data set, as the
// script's does; it is the process's peak so far, so run one model per
// invocation with --benchmark_filter for a per-model figure).
//
// On a GPU (built with --config=cuda), BM_DeviceTrainEpochMlp/Cnn train the
// same epoch on cuda:0 and on the CPU back to back: ratio_vs_cpu = cuda /
// cpu seconds, plus ratio_vs_torch_cuda where the installed PyTorch has
// CUDA (Debian's does not). They skip, saying so, without a visible GPU:
//   tools/bazel run --config=cuda //benches:train_bench --
//       --benchmark_filter=Device
// KINDLING_TRAIN_BENCH_SAMPLES=N trains on the first N samples of the epoch's
// order instead of all 60000 (the smoke test). KINDLING_TRAIN_BENCH_NO_PEER=1
// skips the PyTorch run (no ratio): for profiling Kindling's epoch alone,
//   KINDLING_TRAIN_BENCH_NO_PEER=1 perf record -g bazel-bin/benches/train_bench
//       --benchmark_filter=Mlp
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#if KINDLING_BENCH_CUDA
#include "kindling/backend/cuda/cuda_context.h"
#endif
#include "benchmark/benchmark.h"
#include "examples/cnn.kindling.h"
#include "examples/mlp.kindling.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/epoch_order.h"
#include "kindling/data/mnist.h"
#include "kindling/module/initializer.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/threads.h"
#include "kindling/train/trainer.h"

namespace {

namespace data = kindling::data;
namespace train = kindling::train;
using kindling::Tensor;

constexpr int64_t kBatch = 128;
constexpr uint64_t kSeed = 42;

// The epoch's samples in EpochOrder(kSeed, 0), cut to the sample limit.
struct OrderedData {
  data::ImageDataset dataset;  // rows already in training order
  std::string order_file;      // the same order for the peer
};

const OrderedData& Data() {
  static const OrderedData* ordered = [] {
    // KINDLING_TRAIN_BENCH_DATA: another directory of the IDX files (the GPU
    // bundle carries a subset).
    data::MnistOptions mnist;
    if (const char* dir = std::getenv("KINDLING_TRAIN_BENCH_DATA")) {
      mnist.directory = dir;
    }
    absl::StatusOr<data::ImageDataset> full =
        data::LoadMnistLike(data::MnistSplit::kTrain, mnist);
    if (!full.ok()) {
      std::fprintf(stderr, "%s\n", full.status().ToString().c_str());
      std::exit(1);
    }
    std::vector<int64_t> order = data::EpochOrder(kSeed, 0, full->size());
    if (const char* limit = std::getenv("KINDLING_TRAIN_BENCH_SAMPLES")) {
      order.resize(std::min<size_t>(order.size(), std::atoll(limit)));
    }
    const Tensor<1, kindling::Int> index =
        Tensor<1, kindling::Int>::FromData<int64_t>(
            order, {static_cast<int64_t>(order.size())});
    auto* result = new OrderedData;
    result->dataset = *full;
    result->dataset.images = index_select(full->images, 0, index);
    result->dataset.labels = index_select(full->labels, 0, index);
    const char* tmp = std::getenv("TEST_TMPDIR");
    result->order_file =
        std::string(tmp ? tmp : "/tmp") + "/kindling_train_bench_order.bin";
    std::ofstream(result->order_file, std::ios::binary)
        .write(reinterpret_cast<const char*>(order.data()),
               order.size() * sizeof(int64_t));
    return result;
  }();
  return *ordered;
}

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// PeerPython() is the interpreter of the PyTorch peer: $KINDLING_PEER_PYTHON,
// else Debian's /usr/bin/python3 (the GPU bundle's runner points it at the
// GPU machine's PyTorch).
std::string PeerPython() {
  const char* python = std::getenv("KINDLING_PEER_PYTHON");
  return python != nullptr && python[0] != '\0' ? python : "/usr/bin/python3";
}

struct PeerResult {
  double epoch_seconds = 0;
  double peak_rss_mib = 0;
};

// RunTorch() runs the peer's epoch on `device` ("cpu" or "cuda"). A "cuda"
// run returns nullopt when the installed PyTorch has no CUDA (the script
// exits 3 then); any other failure ends the benchmark.
std::optional<PeerResult> RunTorch(const std::string& model,
                                   const std::string& device = "cpu") {
  const std::string command =
      PeerPython() + " benches/peers/train_torch.py --model " + model +
      " --threads " + std::to_string(train::CpuThreads()) + " --batch_size " +
      std::to_string(kBatch) + " --order " + Data().order_file + " --device " +
      device;
  FILE* pipe = ::popen(command.c_str(), "r");
  PeerResult result;
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof(line), pipe) != nullptr;
  const int status = ::pclose(pipe);
  if (device == "cuda" && WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    return std::nullopt;
  }
  if (status != 0 || !read ||
      std::sscanf(line, "{\"epoch_seconds\": [%lf], \"peak_rss_mib\": %lf",
                  &result.epoch_seconds, &result.peak_rss_mib) != 2) {
    std::fprintf(stderr, "train_bench: '%s' failed: %s\n", command.c_str(),
                 line);
    std::exit(1);
  }
  return result;
}

Tensor<2> MlpLogits(const examples::Mlp& model, const data::Batch& batch,
                    kindling::nn::ForwardMode, kindling::PhiloxGenerator&) {
  return model.Forward(batch.images);
}

Tensor<2> CnnLogits(const examples::Cnn& model, const data::Batch& batch,
                    kindling::nn::ForwardMode, kindling::PhiloxGenerator&) {
  return model.Forward(batch.images_nchw());
}

// KindlingEpoch() trains one epoch of `M` on `device` (Adam 1e-3, batch
// 128, in the order of Data()) and returns its seconds, or the error.
template <class M, class Config>
absl::StatusOr<double> KindlingEpoch(
    const kindling::Device& device,
    typename train::Trainer<M>::ForwardFn forward, int64_t* samples) {
  kindling::SetInitSeed(kSeed);
  M model = Config{}.Init(device);
  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Adam({.lr = 1e-3});
  if (!optimizer.ok()) return optimizer.status();
  // In order: the rows are already in EpochOrder(kSeed, 0).
  data::DataLoader loader(Data().dataset,
                          {.batch_size = kBatch, .shuffle = false});
  train::Trainer<M> trainer(model, *optimizer, loader, {}, forward,
                            {.epochs = 1, .progress = {.quiet = true}});
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<train::TrainReport> report = trainer.Run();
  // The last step's work may still be queued on a device: wait for it.
  if (report.ok()) {
    const absl::Status synced =
        kindling::GetDeviceMemory(device).Synchronize(device);
    if (!synced.ok()) return synced;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!report.ok()) return report.status();
  *samples = report->samples;
  return seconds;
}

// One epoch of `M` on the CPU, then the PyTorch peer's epoch of the same
// model on the same order.
template <class M, class Config>
void TrainEpoch(benchmark::State& state, const std::string& peer_model,
                typename train::Trainer<M>::ForwardFn forward) {
  for (auto _ : state) {
    int64_t samples = 0;
    const absl::StatusOr<double> seconds =
        KindlingEpoch<M, Config>(kindling::Device::Cpu(), forward, &samples);
    if (!seconds.ok()) {
      state.SkipWithError(seconds.status().ToString().c_str());
      return;
    }
    state.SetIterationTime(*seconds);
    const double kindling_rss = PeakRssMib();
    state.counters["kindling_epoch_s"] = *seconds;
    state.counters["kindling_peak_rss_mib"] = kindling_rss;
    state.counters["samples"] = static_cast<double>(samples);
    if (std::getenv("KINDLING_TRAIN_BENCH_NO_PEER") != nullptr) continue;
    const PeerResult torch = *RunTorch(peer_model);
    state.counters["torch_epoch_s"] = torch.epoch_seconds;
    state.counters["ratio_vs_torch"] = *seconds / torch.epoch_seconds;
    state.counters["torch_peak_rss_mib"] = torch.peak_rss_mib;
  }
}

// NoGpuReason() is why the device benchmarks cannot run here, or "".
std::string NoGpuReason() {
#if KINDLING_BENCH_CUDA
  const kindling::cuda::GpuCheck gpu = kindling::cuda::CheckCudaDevices(1);
  if (gpu.verdict == kindling::cuda::GpuVerdict::kRun) return "";
  return "the GPU epoch was not run: " + gpu.message;
#else
  return "built without --config=cuda: the GPU epoch was not run";
#endif
}

// One epoch of `M` on cuda:0 against the same epoch on the CPU (and against
// PyTorch on the GPU where it has CUDA), back to back.
template <class M, class Config>
void DeviceTrainEpoch(benchmark::State& state, const std::string& peer_model,
                      typename train::Trainer<M>::ForwardFn forward) {
  if (const std::string reason = NoGpuReason(); !reason.empty()) {
    state.SkipWithError(reason.c_str());
    return;
  }
  for (auto _ : state) {
    int64_t samples = 0;
    const absl::StatusOr<double> gpu =
        KindlingEpoch<M, Config>(kindling::Device::Cuda(0), forward, &samples);
    const absl::StatusOr<double> cpu =
        KindlingEpoch<M, Config>(kindling::Device::Cpu(), forward, &samples);
    if (!gpu.ok() || !cpu.ok()) {
      state.SkipWithError(
          (gpu.ok() ? cpu.status() : gpu.status()).ToString().c_str());
      return;
    }
    state.SetIterationTime(*gpu);
    state.counters["cuda_epoch_s"] = *gpu;
    state.counters["cpu_epoch_s"] = *cpu;
    state.counters["ratio_vs_cpu"] = *gpu / *cpu;
    state.counters["samples"] = static_cast<double>(samples);
    if (std::getenv("KINDLING_TRAIN_BENCH_NO_PEER") != nullptr) continue;
    if (const std::optional<PeerResult> torch = RunTorch(peer_model, "cuda")) {
      state.counters["torch_cuda_epoch_s"] = torch->epoch_seconds;
      state.counters["ratio_vs_torch_cuda"] = *gpu / torch->epoch_seconds;
    }
  }
}

void BM_TrainEpochMlp(benchmark::State& state) {
  TrainEpoch<examples::Mlp, examples::MlpConfig>(state, "mlp", MlpLogits);
}
void BM_TrainEpochCnn(benchmark::State& state) {
  TrainEpoch<examples::Cnn, examples::CnnConfig>(state, "cnn", CnnLogits);
}
BENCHMARK(BM_TrainEpochMlp)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_TrainEpochCnn)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

void BM_DeviceTrainEpochMlp(benchmark::State& state) {
  DeviceTrainEpoch<examples::Mlp, examples::MlpConfig>(state, "mlp", MlpLogits);
}
void BM_DeviceTrainEpochCnn(benchmark::State& state) {
  DeviceTrainEpoch<examples::Cnn, examples::CnnConfig>(state, "cnn", CnnLogits);
}
BENCHMARK(BM_DeviceTrainEpochMlp)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_DeviceTrainEpochCnn)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  train::SetCpuThreads(2);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
