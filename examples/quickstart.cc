// Kindling quickstart: lazy parameters, then training an MLP on
// Fashion-MNIST.
//
//   tools/bazel run //examples:quickstart                  # full run
//   tools/bazel run //examples:quickstart -- --max_steps=50  # a quick look
//
// Part 1 shows with the CPU memory accounting that a parameter allocates
// nothing until its value is read, and that copies share one value.
// Part 2 trains the README's Mlp (examples/mlp.h, 784-256-256-256-LayerNorm-10)
// with Adam under a cosine schedule, prints the test accuracy after each
// epoch, saves a training checkpoint each epoch (Ctrl-C saves too; --resume
// continues), then loads the checkpoint lazily into a fresh model and
// evaluates that again.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "examples/mlp.kindling.h"
#include "kindling/core/param.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/mnist.h"
#include "kindling/module/initializer.h"
#include "kindling/module/module.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/threads.h"
#include "kindling/train/trainer.h"

ABSL_FLAG(int64_t, epochs, 10, "training epochs");
ABSL_FLAG(int64_t, batch_size, 128, "samples per step");
ABSL_FLAG(double, lr, 1e-3, "Adam's peak learning rate (cosine decay)");
ABSL_FLAG(std::string, out_dir, "",
          "checkpoint directory (default: $TEST_TMPDIR or /tmp, "
          "/kindling_quickstart)");
ABSL_FLAG(int, threads, 2, "CPU threads for the kernels");
ABSL_FLAG(uint64_t, seed, 42, "seed of initialization, data order, dropout");
ABSL_FLAG(bool, resume, false, "continue from the latest checkpoint");
ABSL_FLAG(int64_t, max_steps, 0, "stop after this many steps (0: no limit)");

namespace {

using kindling::Device;
using kindling::GetMemoryStats;
using kindling::Tensor;
namespace data = kindling::data;
namespace train = kindling::train;

std::string Live() {
  const kindling::MemoryStats stats = GetMemoryStats(Device::Cpu());
  return absl::StrFormat("%.1f MiB of tensor memory live",
                         stats.bytes_live / 1048576.0);
}

void LazyTour() {
  std::printf("Part 1: lazy parameters\n");
  kindling::Param<Tensor<2>> weight =
      kindling::Initializer::KaimingUniform(1.0).Init<2>(
          {4096, 4096}, Device::Cpu(), /*fan_in=*/4096, /*fan_out=*/4096);
  std::vector<kindling::Param<Tensor<2>>> copies(100, weight);
  std::printf("  a 64 MiB weight and 100 copies of it: %s\n", Live().c_str());
  const float corner =
      copies[42]->narrow(0, 0, 1).narrow(1, 0, 1).to_data<float>()[0];
  std::printf(
      "  after reading copies[42][0][0] = %+.6f: %s (one value for all)\n",
      corner, Live().c_str());
  const kindling::MemoryStats before = GetMemoryStats(Device::Cpu());
  examples::Mlp mlp = examples::MlpConfig{}.Init();
  std::printf(
      "  examples::Mlp, %lld parameters; tensor bytes allocated by "
      "Init(): %lld\n",
      static_cast<long long>(kindling::NumParams(mlp)),
      static_cast<long long>(GetMemoryStats(Device::Cpu()).bytes_live -
                             before.bytes_live));
  std::printf("%s", kindling::ModuleToString(mlp).c_str());
}

Tensor<2> MlpLogits(const examples::Mlp& model, const data::Batch& batch,
                    kindling::nn::ForwardMode, kindling::PhiloxGenerator&) {
  return model.Forward(batch.images);
}

std::string OutDir() {
  std::string dir = absl::GetFlag(FLAGS_out_dir);
  if (!dir.empty()) return dir;
  const char* test_dir = std::getenv("TEST_TMPDIR");  // set under bazel test
  return std::string(test_dir ? test_dir : "/tmp") + "/kindling_quickstart";
}

int Train() {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::printf("\nPart 2: train it on Fashion-MNIST (%d threads)\n",
              train::CpuThreads());
  absl::StatusOr<data::ImageDataset> train_set =
      data::LoadMnistLike(data::MnistSplit::kTrain);
  absl::StatusOr<data::ImageDataset> test_set =
      data::LoadMnistLike(data::MnistSplit::kTest);
  if (!train_set.ok() || !test_set.ok()) {
    std::fprintf(stderr, "loading Fashion-MNIST failed: %s %s\n",
                 train_set.status().ToString().c_str(),
                 test_set.status().ToString().c_str());
    return 1;
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  kindling::SetInitSeed(seed);
  examples::Mlp model = examples::MlpConfig{}.Init();
  data::DataLoader loader(
      *train_set,
      {.batch_size = absl::GetFlag(FLAGS_batch_size), .seed = seed});
  const int64_t epochs = absl::GetFlag(FLAGS_epochs);
  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Adam({.lr = absl::GetFlag(FLAGS_lr)});
  if (!optimizer.ok()) {
    std::fprintf(stderr, "%s\n", optimizer.status().ToString().c_str());
    return 1;
  }
  optimizer->set_schedule(kindling::LrSchedule::Cosine(
      epochs * loader.batches_per_epoch(), /*min_lr=*/0));

  const std::string out_dir = OutDir();
  train::InstallInterruptHandler();
  train::Trainer<examples::Mlp> trainer(
      model, *optimizer, loader, *test_set, MlpLogits,
      {.epochs = epochs,
       .max_steps = absl::GetFlag(FLAGS_max_steps),
       .out_dir = out_dir,
       .resume = absl::GetFlag(FLAGS_resume),
       .dropout_seed = seed});
  absl::StatusOr<train::TrainReport> report = trainer.Run();
  if (!report.ok()) {
    std::fprintf(stderr, "training failed: %s\n",
                 report.status().ToString().c_str());
    return 1;
  }
  const double accuracy = report->epochs.empty()
                              ? trainer.Evaluate()
                              : report->epochs.back().test_accuracy;
  std::printf("test accuracy of the trained model: %.4f\n", accuracy);

  // Reload the checkpoint into a fresh lazy model: no init runs, the values
  // come from the file (borrowed from its pages where possible).
  examples::Mlp reloaded = examples::MlpConfig{}.Init();
  absl::StatusOr<kindling::Optimizer> reloaded_optimizer =
      kindling::Optimizer::Adam({});
  absl::StatusOr<train::TrainState> state = train::LoadLatestTrainingCheckpoint(
      out_dir, reloaded, *reloaded_optimizer);
  if (!state.ok()) {
    std::fprintf(stderr, "reload failed: %s\n",
                 state.status().ToString().c_str());
    return 1;
  }
  const double reloaded_accuracy =
      train::EvaluateAccuracy(reloaded, *test_set, MlpLogits);
  std::printf(
      "checkpoint %s (step %lld) reloaded: test accuracy %.4f, "
      "matches: %s\n",
      train::LatestCheckpointDir(out_dir)->c_str(),
      static_cast<long long>(state->step), reloaded_accuracy,
      reloaded_accuracy == accuracy ? "yes" : "NO");
  const double wall =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "quickstart: test accuracy %.4f, %lld epochs, wall %.1f s "
      "(training %.1f s), %.0f samples/s%s\n",
      accuracy, static_cast<long long>(report->epochs.size()), wall,
      report->train_seconds, report->samples_per_second(),
      report->stopped_early ? " (stopped early)" : "");
  return reloaded_accuracy == accuracy ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  train::SetCpuThreads(absl::GetFlag(FLAGS_threads));
  LazyTour();
  return Train();
}
