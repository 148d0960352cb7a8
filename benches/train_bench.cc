// Training throughput against its peers: one epoch of Fashion-MNIST, batch
// 128, Adam 1e-3, in Kindling and in each peer on the same data order, run
// back to back in each repetition, for the MLP 784-256-256-256-LayerNorm-10
// (examples/mlp.h) and the CNN conv32-pool-conv64-pool-fc128-fc10
// (examples/cnn.h). The peers (benches/peers/, each a child process on this
// process's cores with Kindling's thread count):
//   torch          today's PyTorch, eager (tools/peers' environment)
//   torch113       Debian's PyTorch 1.13, eager
//   torch_compile  today's PyTorch, torch.compile (TorchInductor)
//   jax            JAX, one jit-compiled train step, the torch peers'
//                  initial weights
// Without tools/peers' environment only torch113 runs.
//
//   taskset -c 0,1 tools/bazel run //benches:train_bench --
//       --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Counters: kindling_epoch_s and <peer>_epoch_s (seconds per epoch, compile
// time excluded: it is <peer>_compile_s), ratio_vs_<peer> = kindling /
// peer (<= 1: Kindling is faster), ratio_vs_flop_limit = kindling / the
// epoch's FLOPs (examples/model_flops.h) at the best f32 GEMM rate measured
// right after it (gemm_GFLOPs; benches/flop_limit.h), <peer>_cores_used (the
// peer's CPU seconds / its epoch's seconds), the final losses, and the peak RSS
// of each process in MiB (Kindling's includes the data set, as the scripts' do;
// it is the process's peak so far, so run one model per invocation with
// --benchmark_filter for a per-model figure), and kindling_faults_per_step,
// the process's minor page faults per step after the epoch's first
// kWarmUpSteps (well under one once the CPU allocator serves every step's
// blocks from its cache, cpu_allocator.h). phase_data_s, phase_forward_s,
// phase_backward_s and phase_optimizer_s are the Trainer's seconds in each
// phase of the epoch's steps (TrainerOptions::time_phases), and
// optimizer_vs_flop_limit the optimizer's part of ratio_vs_flop_limit. The
// loss every 50 steps of every run is printed to stderr side by side.
//
// On a GPU (built with --config=cuda), BM_DeviceTrainEpochMlp/Cnn train the
// same epoch on cuda:0 and on the CPU back to back: ratio_vs_cpu = cuda /
// cpu seconds, plus ratio_vs_torch_cuda where the installed PyTorch has
// CUDA (Debian's does not). On the GPU both Kindling and PyTorch train a
// warm-up epoch first, and the second epoch is compared; the first epochs
// are reported as *_first_epoch_s. They skip, saying so, without a visible GPU:
//   tools/bazel run --config=cuda //benches:train_bench --
//       --benchmark_filter=Device
// BM_CnnEpochUnderLoad trains the CNN's epoch in Kindling and in today's
// eager torch (the first peer), each on a quiet machine and then with one
// competing busy process spinning on the same cores:
//   taskset -c 0,1 bazel-bin/benches/train_bench
//       --benchmark_filter=BM_CnnEpochUnderLoad --benchmark_repetitions=3
// Counters: kindling_slowdown and <peer>_slowdown (loaded / quiet epoch),
// and slowdown_vs_<peer> = Kindling's / the peer's (<= 1: Kindling degrades
// no worse than PyTorch).
// BM_MlpEpochProducts runs only the matrix products of the MLP's epoch (every
// batch's forward, input-gradient and weight-gradient products at their
// shapes): its ratio_vs_flop_limit is the floor BM_TrainEpochMlp's stands on
// when everything but the products is free.
// BM_MlpEpochVsProducts alternates the MLP's epoch and those products alone
// five times: epoch_vs_products (median of the pairs' ratios, with their
// _min and _max) is what the step costs beyond its products, a figure that
// moves far less than either alone while the host's speed drifts;
// optimizer_vs_products (median) is the optimizer's steps' part of it.
// KINDLING_TRAIN_BENCH_SAMPLES=N trains on the first N samples of the epoch's
// order instead of all 60000 (the smoke test). KINDLING_TRAIN_BENCH_NO_PEER=1
// skips the peers (no ratio): for profiling Kindling's epoch alone,
//   KINDLING_TRAIN_BENCH_NO_PEER=1 perf record -g bazel-bin/benches/train_bench
//       --benchmark_filter=Mlp
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#if KINDLING_BENCH_CUDA
#include "kindling/backend/cuda/cuda_context.h"
#endif
#include "benches/flop_limit.h"
#include "benches/median.h"
#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "examples/cnn.kindling.h"
#include "examples/mlp.kindling.h"
#include "examples/model_flops.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/epoch_order.h"
#include "kindling/data/mnist.h"
#include "kindling/module/initializer.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/classifier.h"
#include "kindling/train/threads.h"

namespace {

namespace data = kindling::data;
namespace train = kindling::train;
using kindling::Tensor;
using kindling::bench::Median;

constexpr int64_t kBatch = 128;
constexpr uint64_t kSeed = 42;
constexpr int kLossEvery = 50;  // as LOSS_EVERY in the peer scripts

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

int64_t MinorPageFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The steps that fill the allocator's cache and the libraries' kernel caches
// before kindling_faults_per_step counts.
constexpr int64_t kWarmUpSteps = 10;

// PeerResult: what a peer script printed (benches/peers/train_torch.py,
// train_jax.py): one JSON line of known keys.
struct PeerResult {
  std::string version;
  double epoch_seconds = 0;  // the last epoch's (--epochs 2: the warm one)
  double first_epoch_seconds = 0;
  double cpu_seconds = 0;
  double compile_seconds = 0;
  double peak_rss_mib = 0;
  double final_loss = 0;
  std::vector<double> losses;  // every kLossEvery steps
};

// A peer's command, by the status it exits with: 0 ran, 3 no CUDA in this
// torch, 4 no torch.compile in this torch; anything else failed.
enum class PeerOutcome { kRan, kUnavailable, kFailed };

// RunPeer() runs `script` (under benches/peers/) with `python` on this
// process's cores and Kindling's thread count, for `model` on `device`, and
// parses its line; `extra` is appended to the command line.
PeerOutcome RunPeer(const std::string& python, const std::string& script,
                    const std::string& model, const std::string& device,
                    const std::string& extra, PeerResult* result) {
  const std::string command =
      python + " benches/peers/" + script + " --model " + model +
      " --threads " + std::to_string(train::CpuThreads()) + " --batch_size " +
      std::to_string(kBatch) + " --order " + Data().order_file +
      (device == "cpu" ? "" : " --device " + device) + extra;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) line += buffer;
  const int status = ::pclose(pipe);
  if (WIFEXITED(status) &&
      (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4)) {
    std::fprintf(stderr, "train_bench: %s: %s", command.c_str(), line.c_str());
    return PeerOutcome::kUnavailable;
  }
  const std::vector<double> seconds =
      kindling::bench::JsonNumbers(line, "epoch_seconds");
  if (status != 0 || seconds.empty()) {
    std::fprintf(stderr, "train_bench: '%s' failed: %s\n", command.c_str(),
                 line.c_str());
    return PeerOutcome::kFailed;
  }
  result->version = kindling::bench::JsonString(line, "version");
  result->epoch_seconds = seconds.back();
  result->first_epoch_seconds = seconds.front();
  result->cpu_seconds =
      kindling::bench::JsonNumber(line, "cpu_seconds").value_or(0);
  result->compile_seconds =
      kindling::bench::JsonNumber(line, "compile_seconds").value_or(0);
  result->peak_rss_mib =
      kindling::bench::JsonNumber(line, "peak_rss_mib").value_or(0);
  result->final_loss =
      kindling::bench::JsonNumber(line, "final_loss").value_or(0);
  result->losses = kindling::bench::JsonNumbers(line, "losses");
  return PeerOutcome::kRan;
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
// 128, in the order of Data()) and returns its seconds, or the error. It
// appends each step's loss to `losses`, sets `warm_faults` to the process's
// minor page faults after step kWarmUpSteps and `phases` to the Trainer's
// time in each phase of the steps (TrainerOptions::time_phases), where
// given.
template <class M, class Config>
absl::StatusOr<double> KindlingEpoch(
    const kindling::Device& device,
    typename train::ClassifierTrainer<M>::ForwardFn forward, int64_t* samples,
    std::vector<double>* losses = nullptr,
    std::optional<int64_t>* warm_faults = nullptr,
    train::StepPhases* phases = nullptr) {
  kindling::SetInitSeed(kSeed);
  M model = Config{}.Init(device);
  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Adam({.lr = 1e-3});
  if (!optimizer.ok()) return optimizer.status();
  // In order: the rows are already in EpochOrder(kSeed, 0).
  data::DataLoader loader(Data().dataset,
                          {.batch_size = kBatch, .shuffle = false});
  train::TrainerOptions options{.epochs = 1,
                                .progress = {.quiet = true},
                                .time_phases = phases != nullptr};
  if (losses != nullptr || warm_faults != nullptr) {
    options.on_step = [losses, warm_faults](int64_t step, double loss) {
      if (losses != nullptr) losses->push_back(loss);
      if (warm_faults != nullptr && step == kWarmUpSteps) {
        *warm_faults = MinorPageFaults();
      }
    };
  }
  train::ClassifierTrainer<M> trainer(model, *optimizer, loader, {}, forward,
                                      options);
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
  if (phases != nullptr) *phases = report->phases;
  return seconds;
}

// ReportPhases() sets the counters of where the epoch's steps spent their
// time (phase_*_s: the loader, forward and loss, backward, the optimizer)
// and optimizer_vs_flop_limit, the optimizer's seconds over the epoch's
// FLOP limit `flop_limit_s`: the share of ratio_vs_flop_limit that the
// optimizer's steps take.
void ReportPhases(benchmark::State& state, const train::StepPhases& phases,
                  double flop_limit_s) {
  state.counters["phase_data_s"] = phases.data;
  state.counters["phase_forward_s"] = phases.forward;
  state.counters["phase_backward_s"] = phases.backward;
  state.counters["phase_optimizer_s"] = phases.optimizer;
  state.counters["optimizer_vs_flop_limit"] = phases.optimizer / flop_limit_s;
}

// EveryNth(values, n) is values[n - 1], values[2n - 1], ...: the losses of
// steps n, 2n, ... as the peers report them.
std::vector<double> EveryNth(const std::vector<double>& values, size_t n) {
  std::vector<double> picked;
  for (size_t i = n - 1; i < values.size(); i += n) picked.push_back(values[i]);
  return picked;
}

// PrintLossCurves() prints, to stderr, each run's loss every kLossEvery
// steps side by side: the same recipe should give curves that stay close
// (the torch and JAX peers start from the same weights; Kindling from its
// own initialization of the same layers).
void PrintLossCurves(
    const std::string& model,
    const std::vector<std::pair<std::string, std::vector<double>>>& curves) {
  std::fprintf(stderr, "train_bench: %s loss every %d steps\n  step",
               model.c_str(), kLossEvery);
  size_t rows = 0;
  for (const auto& [name, losses] : curves) {
    std::fprintf(stderr, " | %s", name.c_str());
    rows = std::max(rows, losses.size());
  }
  std::fprintf(stderr, "\n");
  for (size_t row = 0; row < rows; ++row) {
    std::fprintf(stderr, "  %4zu", (row + 1) * kLossEvery);
    for (const auto& curve : curves) {
      if (row < curve.second.size()) {
        std::fprintf(stderr, " | %.4f", curve.second[row]);
      } else {
        std::fprintf(stderr, " | -");
      }
    }
    std::fprintf(stderr, "\n");
  }
}

// One epoch of `M` on the CPU, then each peer's epoch of the same model on
// the same order (the columns of TrainingPeerColumns()).
template <class M, class Config>
void TrainEpoch(benchmark::State& state, const std::string& peer_model,
                typename train::ClassifierTrainer<M>::ForwardFn forward) {
  for (auto _ : state) {
    int64_t samples = 0;
    std::vector<double> losses;
    std::optional<int64_t> warm_faults;
    train::StepPhases phases;
    const absl::StatusOr<double> seconds =
        KindlingEpoch<M, Config>(kindling::Device::Cpu(), forward, &samples,
                                 &losses, &warm_faults, &phases);
    const int64_t faults = MinorPageFaults();
    if (!seconds.ok() || losses.empty()) {
      state.SkipWithError(seconds.ok() ? "the epoch ran no step"
                                       : seconds.status().ToString().c_str());
      return;
    }
    state.SetIterationTime(*seconds);
    const double kindling_rss = PeakRssMib();
    state.counters["kindling_epoch_s"] = *seconds;
    state.counters["kindling_peak_rss_mib"] = kindling_rss;
    state.counters["samples"] = static_cast<double>(samples);
    state.counters["kindling_final_loss"] = losses.back();
    const int64_t steps = static_cast<int64_t>(losses.size());
    if (warm_faults.has_value() && steps > kWarmUpSteps) {
      state.counters["kindling_faults_per_step"] =
          static_cast<double>(faults - *warm_faults) /
          static_cast<double>(steps - kWarmUpSteps);
    }
    // Rows enter every layer linearly: the epoch's FLOPs are one batch of
    // `samples` rows.
    const double flop_limit_s = kindling::bench::ReportFlopLimit(
        state, examples::TrainingFlops(Config{}.Init(), samples).total(),
        *seconds, kindling::bench::BestGemmRate());
    ReportPhases(state, phases, flop_limit_s);
    if (std::getenv("KINDLING_TRAIN_BENCH_NO_PEER") != nullptr) continue;
    std::vector<std::pair<std::string, std::vector<double>>> curves = {
        {"kindling", EveryNth(losses, kLossEvery)}};
    for (const kindling::bench::PeerColumn& column :
         kindling::bench::TrainingPeerColumns("train_torch.py",
                                              "train_jax.py")) {
      PeerResult peer;
      const PeerOutcome outcome = RunPeer(
          column.python, column.script, peer_model, "cpu", column.extra, &peer);
      if (outcome != PeerOutcome::kRan) {
        if (outcome == PeerOutcome::kFailed && column.required) {
          state.SkipWithError(("peer " + column.python + " " + column.script +
                               " failed (see stderr)")
                                  .c_str());
          return;
        }
        continue;
      }
      const std::string label = column.label.empty()
                                    ? kindling::bench::PeerLabel(peer.version)
                                    : column.label;
      state.counters[label + "_epoch_s"] = peer.epoch_seconds;
      state.counters["ratio_vs_" + label] = *seconds / peer.epoch_seconds;
      state.counters[label + "_peak_rss_mib"] = peer.peak_rss_mib;
      state.counters[label + "_cores_used"] =
          peer.cpu_seconds / peer.epoch_seconds;
      state.counters[label + "_final_loss"] = peer.final_loss;
      if (peer.compile_seconds > 0) {
        state.counters[label + "_compile_s"] = peer.compile_seconds;
      }
      curves.emplace_back(label + " " + peer.version, peer.losses);
    }
    PrintLossCurves(peer_model, curves);
  }
}

// BusyProcess: a child process spinning on a core of this process's
// affinity mask for as long as the object lives: the competing load of
// BM_CnnEpochUnderLoad.
class BusyProcess {
 public:
  BusyProcess() : pid_(::fork()) {
    if (pid_ == 0) {
      for (;;) asm volatile("");  // spin until killed
    }
  }
  ~BusyProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;

 private:
  pid_t pid_;
};

void BM_CnnEpochUnderLoad(benchmark::State& state) {
  const kindling::bench::PeerColumn torch =
      kindling::bench::TrainingPeerColumns("train_torch.py", "train_jax.py")[0];
  for (auto _ : state) {
    int64_t samples = 0;
    const absl::StatusOr<double> quiet =
        KindlingEpoch<examples::Cnn, examples::CnnConfig>(
            kindling::Device::Cpu(), CnnLogits, &samples);
    absl::StatusOr<double> loaded = absl::InternalError("not run");
    {
      const BusyProcess busy;
      loaded = KindlingEpoch<examples::Cnn, examples::CnnConfig>(
          kindling::Device::Cpu(), CnnLogits, &samples);
    }
    if (!quiet.ok() || !loaded.ok()) {
      state.SkipWithError(
          (quiet.ok() ? loaded.status() : quiet.status()).ToString().c_str());
      return;
    }
    PeerResult torch_quiet, torch_loaded;
    PeerOutcome outcome =
        RunPeer(torch.python, torch.script, "cnn", "cpu", "", &torch_quiet);
    if (outcome == PeerOutcome::kRan) {
      const BusyProcess busy;
      outcome =
          RunPeer(torch.python, torch.script, "cnn", "cpu", "", &torch_loaded);
    }
    if (outcome != PeerOutcome::kRan) {
      state.SkipWithError("the torch peer failed (see stderr)");
      return;
    }
    state.SetIterationTime(*loaded);
    const double kindling_slowdown = *loaded / *quiet;
    const double torch_slowdown =
        torch_loaded.epoch_seconds / torch_quiet.epoch_seconds;
    const std::string label = kindling::bench::PeerLabel(torch_quiet.version);
    state.counters["kindling_quiet_s"] = *quiet;
    state.counters["kindling_loaded_s"] = *loaded;
    state.counters["kindling_slowdown"] = kindling_slowdown;
    state.counters[label + "_quiet_s"] = torch_quiet.epoch_seconds;
    state.counters[label + "_loaded_s"] = torch_loaded.epoch_seconds;
    state.counters[label + "_slowdown"] = torch_slowdown;
    state.counters["slowdown_vs_" + label] = kindling_slowdown / torch_slowdown;
  }
}
BENCHMARK(BM_CnnEpochUnderLoad)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

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
                      typename train::ClassifierTrainer<M>::ForwardFn forward) {
  if (const std::string reason = NoGpuReason(); !reason.empty()) {
    state.SkipWithError(reason.c_str());
    return;
  }
  for (auto _ : state) {
    int64_t samples = 0;
    // A GPU's first epoch pays one-time costs (module loading, cuBLAS and
    // cuDNN handles and heuristics, the caching allocator filling up) that
    // 20000 samples do not amortize: both sides train a warm-up epoch first
    // and the second is compared (the first is reported apart).
    const absl::StatusOr<double> gpu_first =
        KindlingEpoch<M, Config>(kindling::Device::Cuda(0), forward, &samples);
    if (!gpu_first.ok()) {
      state.SkipWithError(gpu_first.status().ToString().c_str());
      return;
    }
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
    state.counters["cuda_first_epoch_s"] = *gpu_first;
    state.counters["cpu_epoch_s"] = *cpu;
    state.counters["ratio_vs_cpu"] = *gpu / *cpu;
    state.counters["samples"] = static_cast<double>(samples);
    if (std::getenv("KINDLING_TRAIN_BENCH_NO_PEER") != nullptr) continue;
    PeerResult torch;
    const PeerOutcome outcome =
        RunPeer(kindling::bench::PeerPythons().front(), "train_torch.py",
                peer_model, "cuda", " --epochs 2", &torch);
    if (outcome == PeerOutcome::kFailed) {
      state.SkipWithError("the PyTorch peer failed on cuda (see stderr)");
      return;
    }
    if (outcome == PeerOutcome::kRan) {
      state.counters["torch_cuda_epoch_s"] = torch.epoch_seconds;
      state.counters["torch_cuda_first_epoch_s"] = torch.first_epoch_seconds;
      state.counters["ratio_vs_torch_cuda"] = *gpu / torch.epoch_seconds;
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

// MlpProducts: one step's matrix products of the MLP's Linear layers at
// `rows` rows, on inputs and output gradients of the right shapes (values
// do not change a product's time).
class MlpProducts {
 public:
  explicit MlpProducts(int64_t rows) {
    const examples::Mlp model = examples::MlpConfig{}.Init();
    Add(model.fc1, rows, /*input_gradient=*/false);
    for (const kindling::nn::Linear& layer : model.hidden) {
      Add(layer, rows, true);
    }
    Add(model.fc2, rows, true);
  }

  // Run(): the forward product of every layer, then, last layer first, its
  // weight's gradient and (all but the first layer) its input's, as
  // Backward() issues them; the results are dropped.
  void Run() const {
    for (const Layer& layer : layers_) {
      benchmark::DoNotOptimize(matmul(layer.input, layer.weight));
    }
    for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
      benchmark::DoNotOptimize(matmul(layer->input.t(), layer->output_grad));
      if (layer->input_gradient) {
        benchmark::DoNotOptimize(matmul(layer->output_grad, layer->weight.t()));
      }
    }
  }

 private:
  struct Layer {
    Tensor<2> input;        // [rows, d_input]
    Tensor<2> weight;       // [d_input, d_output]
    Tensor<2> output_grad;  // [rows, d_output]
    bool input_gradient;
  };

  void Add(const kindling::nn::Linear& linear, int64_t rows,
           bool input_gradient) {
    const Tensor<2>& weight = *linear.weight;
    const kindling::Shape shape = weight.shape();
    layers_.push_back({Tensor<2>::Full({rows, shape[0]}, 0.5), weight,
                       Tensor<2>::Full({rows, shape[1]}, 0.25),
                       input_gradient});
  }

  std::vector<Layer> layers_;
};

// MlpEpochProducts: the MLP epoch's matrix products alone, through the same
// matmul as its training step (oneDNN or OpenBLAS slabs on Kindling's pool),
// for every batch of the epoch, and nothing else: no bias, activation, layer
// norm, loss, optimizer step, data or autodiff graph.
class MlpEpochProducts {
 public:
  MlpEpochProducts()
      : full_batches_(Data().dataset.size() / kBatch),
        full_(kBatch),
        last_(
            Data().dataset.size() % kBatch == 0
                ? std::nullopt
                : std::optional<MlpProducts>(Data().dataset.size() % kBatch)) {
    // Untimed: the libraries build a shape's kernels on its first calls.
    Seconds();
    Seconds();
  }

  // Seconds() runs every batch's products once and returns how long that
  // took.
  double Seconds() const {
    kindling::NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t batch = 0; batch < full_batches_; ++batch) full_.Run();
    if (last_.has_value()) last_->Run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

 private:
  int64_t full_batches_;
  MlpProducts full_;
  std::optional<MlpProducts> last_;
};

// Its ratio_vs_flop_limit is the least BM_TrainEpochMlp's could be with every
// other pass free.
void BM_MlpEpochProducts(benchmark::State& state) {
  const int64_t samples = Data().dataset.size();
  const MlpEpochProducts products;
  for (auto _ : state) {
    const double seconds = products.Seconds();
    state.SetIterationTime(seconds);
    state.counters["products_epoch_s"] = seconds;
    kindling::bench::ReportFlopLimit(
        state,
        examples::TrainingFlops(examples::MlpConfig{}.Init(), samples).total(),
        seconds, kindling::bench::BestGemmRate());
  }
}
BENCHMARK(BM_MlpEpochProducts)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

// The MLP's epoch and its products alone (BM_MlpEpochProducts's work),
// alternated kEpochProductPairs times; epoch_vs_products is the median of
// the pairs' ratios. Each pair runs within seconds, so the ratio, what the
// step costs beyond its matrix products, moves far less than either alone
// while the host's speed drifts (on a shared 2-core host, 24 runs of
// BM_TrainEpochMlp in one half hour read ratio_vs_flop_limit 1.16-1.46,
// four runs of this one 1.24-1.26).
constexpr int kEpochProductPairs = 5;
void BM_MlpEpochVsProducts(benchmark::State& state) {
  const MlpEpochProducts products;
  for (auto _ : state) {
    std::vector<double> epochs, alone, ratios, optimizer_ratios;
    for (int pair = 0; pair < kEpochProductPairs; ++pair) {
      int64_t samples = 0;
      train::StepPhases phases;
      const absl::StatusOr<double> epoch =
          KindlingEpoch<examples::Mlp, examples::MlpConfig>(
              kindling::Device::Cpu(), MlpLogits, &samples, nullptr, nullptr,
              &phases);
      if (!epoch.ok()) {
        state.SkipWithError(epoch.status().ToString().c_str());
        return;
      }
      epochs.push_back(*epoch);
      alone.push_back(products.Seconds());
      ratios.push_back(epochs.back() / alone.back());
      optimizer_ratios.push_back(phases.optimizer / alone.back());
    }
    state.SetIterationTime(Median(epochs));
    state.counters["kindling_epoch_s"] = Median(epochs);
    state.counters["products_epoch_s"] = Median(alone);
    state.counters["epoch_vs_products"] = Median(ratios);
    state.counters["epoch_vs_products_min"] =
        *std::min_element(ratios.begin(), ratios.end());
    state.counters["epoch_vs_products_max"] =
        *std::max_element(ratios.begin(), ratios.end());
    state.counters["optimizer_vs_products"] = Median(optimizer_ratios);
  }
}
BENCHMARK(BM_MlpEpochVsProducts)
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
