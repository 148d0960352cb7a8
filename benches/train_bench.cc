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
// KINDLING_TRAIN_BENCH_SAMPLES=N trains on the first N samples of the epoch's
// order instead of all 60000 (the smoke test). KINDLING_TRAIN_BENCH_NO_PEER=1
// skips the PyTorch run (no ratio): for profiling Kindling's epoch alone,
//   KINDLING_TRAIN_BENCH_NO_PEER=1 perf record -g bazel-bin/benches/train_bench
//       --benchmark_filter=Mlp
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "examples/cnn.kindling.h"
#include "examples/mlp.kindling.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/epoch_order.h"
#include "kindling/data/mnist.h"
#include "kindling/module/initializer.h"
#include "kindling/optim/optimizer.h"
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
    absl::StatusOr<data::ImageDataset> full =
        data::LoadMnistLike(data::MnistSplit::kTrain);
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

struct PeerResult {
  double epoch_seconds = 0;
  double peak_rss_mib = 0;
};

PeerResult RunTorch(const std::string& model) {
  const std::string command =
      "/usr/bin/python3 benches/peers/train_torch.py --model " + model +
      " --threads " + std::to_string(train::CpuThreads()) + " --batch_size " +
      std::to_string(kBatch) + " --order " + Data().order_file;
  FILE* pipe = ::popen(command.c_str(), "r");
  PeerResult result;
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof(line), pipe) != nullptr;
  if (::pclose(pipe) != 0 || !read ||
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

// One epoch of `M` (Adam 1e-3, batch 128, in the order of Data()), then the
// PyTorch peer's epoch of the same model on the same order.
template <class M, class Config>
void TrainEpoch(benchmark::State& state, const std::string& peer_model,
                typename train::Trainer<M>::ForwardFn forward) {
  const data::ImageDataset& dataset = Data().dataset;
  for (auto _ : state) {
    kindling::SetInitSeed(kSeed);
    M model = Config{}.Init();
    absl::StatusOr<kindling::Optimizer> optimizer =
        kindling::Optimizer::Adam({.lr = 1e-3});
    // In order: the rows are already in EpochOrder(kSeed, 0).
    data::DataLoader loader(dataset, {.batch_size = kBatch, .shuffle = false});
    train::Trainer<M> trainer(model, *optimizer, loader, {}, forward,
                              {.epochs = 1, .progress = {.quiet = true}});
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<train::TrainReport> report = trainer.Run();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!report.ok()) {
      state.SkipWithError(report.status().ToString().c_str());
      return;
    }
    state.SetIterationTime(seconds);
    const double kindling_rss = PeakRssMib();
    state.counters["kindling_epoch_s"] = seconds;
    state.counters["kindling_peak_rss_mib"] = kindling_rss;
    state.counters["samples"] = static_cast<double>(report->samples);
    if (std::getenv("KINDLING_TRAIN_BENCH_NO_PEER") != nullptr) continue;
    const PeerResult torch = RunTorch(peer_model);
    state.counters["torch_epoch_s"] = torch.epoch_seconds;
    state.counters["ratio_vs_torch"] = seconds / torch.epoch_seconds;
    state.counters["torch_peak_rss_mib"] = torch.peak_rss_mib;
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

}  // namespace

int main(int argc, char** argv) {
  train::SetCpuThreads(2);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
