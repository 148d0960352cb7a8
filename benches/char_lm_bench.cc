// examples/char_lm.h's byte-level GPT (4 layers, d_model 128, 4 heads,
// context 128, batch 32) trained for kSteps steps on the fortunes, against
// its PyTorch twin (benches/peers/char_lm_torch.py) run from the same
// initial weights on the same windows in the same order with the same
// recipe (AdamW 1e-3, constant), on the same cores and thread count.
//
// The peers: torch (today's, from tools/peers) and torch113 (Debian's)
// eager; with today's environment also torch_compile (the same script under
// torch.compile) and jax (benches/peers/char_lm_jax.py, one jit-compiled
// step).
//
// Counters: ms_per_step (Kindling's median training step), ratio_vs_<peer>
// (that over the peer's median: < 1 is faster), val_gap_vs_<peer> (the
// largest relative difference of the validation losses measured every
// kEvalEvery steps), bits_per_byte (Kindling's last), peak_tensor_MiB and
// peak_rss_MiB (Kindling's), <peer>_peak_rss_MiB, <peer>_compile_s (compile
// time, outside the timed steps), ratio_vs_flop_limit (the median step over
// its FLOPs, examples/model_flops.h, at the best f32 GEMM rate measured in
// the run: benches/flop_limit.h) and jax_cores_used (its CPU seconds over
// its steps' wall seconds).
//
// KINDLING_CHAR_LM_BENCH_STEPS overrides kSteps (the smoke test runs a few).
// KINDLING_CHAR_LM_BENCH_NO_PEER=1 skips the peers (no ratio_vs_<peer>): for
// profiling or comparing Kindling's step alone.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "benches/flop_limit.h"
#include "benches/median.h"
#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "examples/char_lm.kindling.h"
#include "examples/char_lm_loss.h"
#include "examples/model_flops.h"
#include "examples/text_corpus.h"
#include "kindling/autodiff/backward.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/status_macros.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/epoch_order.h"
#include "kindling/io/module_file.h"
#include "kindling/module/initializer.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling {
namespace {

using bench::Median;

constexpr int64_t kBatch = 32;
constexpr int64_t kContext = 128;
constexpr int64_t kEvalEvery = 50;
constexpr int64_t kValidationWindows = 64;
constexpr uint64_t kSeed = 42;

int64_t Steps() {
  const char* steps = std::getenv("KINDLING_CHAR_LM_BENCH_STEPS");
  return steps != nullptr ? std::max<int64_t>(1, std::atoll(steps)) : 200;
}

struct Corpus {
  examples::TextWindows train;
  examples::TextWindows validation;
};

const Corpus* LoadCorpus() {
  static const Corpus* corpus = []() -> const Corpus* {
    absl::StatusOr<std::string> text = examples::LoadFortunes();
    if (!text.ok()) return nullptr;
    std::string train, validation;
    examples::SplitText(*text, 0.05, train, validation);
    return new Corpus{
        {std::make_shared<const std::string>(std::move(train)), kContext},
        {std::make_shared<const std::string>(std::move(validation)), kContext}};
  }();
  return corpus;
}

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// KindlingRun: what the Kindling side measured.
struct KindlingRun {
  std::vector<double> step_seconds;
  std::vector<double> bits;  // every kEvalEvery steps
  int64_t peak_tensor_bytes = 0;
};

// TrainKindling() writes the initial weights (PyTorch layout) and the
// windows' order to `dir` for the peers, then trains `steps` steps.
absl::StatusOr<KindlingRun> TrainKindling(const Corpus& corpus,
                                          const std::string& dir,
                                          int64_t steps) {
  SetInitSeed(kSeed);
  examples::CharLm model = examples::CharLmConfig{}.Init();
  SaveOptions save;
  save.pytorch = PyTorchAdapter{};
  KINDLING_RETURN_IF_ERROR(SaveModule(model, dir + "/init.safetensors", save));
  const std::vector<int64_t> order =
      data::EpochOrder(kSeed, 0, corpus.train.size());
  std::ofstream(dir + "/order.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(order.data()),
             static_cast<std::streamsize>(order.size() * sizeof(int64_t)));
  data::DataLoader loader(corpus.train, {.batch_size = kBatch, .seed = kSeed});
  KINDLING_ASSIGN_OR_RETURN(Optimizer optimizer,
                            Optimizer::AdamW({.lr = 1e-3}));
  KindlingRun run;
  ResetMemoryStats(Device::Cpu());
  const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
  for (int64_t step = 1; step <= steps; ++step) {
    std::optional<examples::TextWindows::Batch> batch = loader.Next();
    if (!batch.has_value()) return absl::InternalError("the epoch ran out");
    const auto start = std::chrono::steady_clock::now();
    const Tensor<0> loss = examples::CharLmLoss(model, *batch, {});
    KINDLING_RETURN_IF_ERROR(optimizer.Step(model, Backward(loss)));
    run.step_seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    if (step % kEvalEvery == 0 || step == steps) {
      run.bits.push_back(examples::ValidationBitsPerByte(
          model, corpus.validation, kValidationWindows));
    }
  }
  run.peak_tensor_bytes =
      GetMemoryStats(Device::Cpu()).peak_live_bytes - before;
  return run;
}

// PeerRun: one peer's JSON line.
struct PeerRun {
  std::string version;
  double step_seconds = 0;
  std::vector<double> bits;
  double peak_rss_mib = 0;
  double compile_seconds = 0;
  double cores_used = 0;  // CPU seconds / wall seconds of the steps, if given
};

std::optional<PeerRun> RunPeer(const bench::PeerColumn& column,
                               const std::string& dir, int64_t steps) {
  const int64_t eval_every = std::min(kEvalEvery, steps);
  const std::string command =
      column.python + " " +
      bench::FindSource("benches/peers/" + column.script) + column.extra +
      " --init " + dir + "/init.safetensors --order " + dir +
      "/order.bin --steps " + std::to_string(steps) + " --eval_every " +
      std::to_string(eval_every) + " --validation_windows " +
      std::to_string(kValidationWindows) + " --threads " +
      std::to_string(cpu::MaxThreads());
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) line += buffer;
  const int status = ::pclose(pipe);
  const std::optional<double> seconds = bench::JsonNumber(line, "step_seconds");
  if (status != 0 || !seconds.has_value()) {
    std::fprintf(stderr, "char_lm_bench: '%s' failed: %s\n", command.c_str(),
                 line.c_str());
    return std::nullopt;
  }
  PeerRun run{bench::JsonString(line, "version"), *seconds,
              bench::JsonNumbers(line, "bits"),
              bench::JsonNumber(line, "peak_rss_mib").value_or(0),
              bench::JsonNumber(line, "compile_seconds").value_or(0)};
  const double wall = bench::JsonNumber(line, "wall_seconds").value_or(0);
  if (wall > 0) {
    run.cores_used = bench::JsonNumber(line, "cpu_seconds").value_or(0) / wall;
  }
  return run;
}

// LargestGap() is max |a_i - b_i| / b_i over the points both have.
double LargestGap(const std::vector<double>& a, const std::vector<double>& b) {
  double gap = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    gap = std::max(gap, std::fabs(a[i] - b[i]) / b[i]);
  }
  return gap;
}

void BM_CharLmSteps(benchmark::State& state) {
  const Corpus* corpus = LoadCorpus();
  if (corpus == nullptr) {
    state.SkipWithError("no fortunes in /usr/share/games/fortunes");
    return;
  }
  const int64_t steps = Steps();
  const std::string dir =
      (std::filesystem::temp_directory_path() / "kindling_char_lm_bench")
          .string();
  std::filesystem::create_directories(dir);
  for (auto _ : state) {
    absl::StatusOr<KindlingRun> run = TrainKindling(*corpus, dir, steps);
    if (!run.ok()) {
      state.SkipWithError(run.status().ToString().c_str());
      return;
    }
    const double median = Median(run->step_seconds);
    state.SetIterationTime(median * steps);
    state.counters["ms_per_step"] = 1e3 * median;
    state.counters["bits_per_byte"] = run->bits.back();
    state.counters["peak_tensor_MiB"] =
        run->peak_tensor_bytes / double{1 << 20};
    state.counters["peak_rss_MiB"] = PeakRssMib();
    bench::ReportFlopLimit(
        state,
        examples::TrainingFlops(examples::CharLmConfig{}.Init(), kBatch,
                                kContext)
            .total(),
        median, bench::BestGemmRate());
    if (std::getenv("KINDLING_CHAR_LM_BENCH_NO_PEER") != nullptr) continue;
    for (const bench::PeerColumn& column :
         bench::TrainingPeerColumns("char_lm_torch.py", "char_lm_jax.py")) {
      const std::optional<PeerRun> peer = RunPeer(column, dir, steps);
      if (!peer.has_value()) {
        if (!column.required) continue;
        state.SkipWithError("the PyTorch peer failed (see stderr)");
        return;
      }
      const std::string label =
          column.label.empty() ? bench::PeerLabel(peer->version) : column.label;
      state.counters["ratio_vs_" + label] = median / peer->step_seconds;
      state.counters["val_gap_vs_" + label] = LargestGap(run->bits, peer->bits);
      state.counters[label + "_peak_rss_MiB"] = peer->peak_rss_mib;
      if (peer->compile_seconds > 0) {
        state.counters[label + "_compile_s"] = peer->compile_seconds;
      }
      if (peer->cores_used > 0) {
        state.counters[label + "_cores_used"] = peer->cores_used;
      }
    }
  }
}
BENCHMARK(BM_CharLmSteps)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  return kindling::bench::PeerBenchmarkMain(argc, argv);
}
