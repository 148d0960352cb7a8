// Kindling quickstart: lazy parameters, then training an MLP on
// Fashion-MNIST.
//
//   tools/bazel run //examples:quickstart                  # full run
//   tools/bazel run //examples:quickstart -- --max_steps=50  # a quick look
//   tools/bazel run --config=cuda //examples:quickstart -- --device=cuda
//
// Part 1 shows with the CPU memory accounting that a parameter allocates
// nothing until its value is read, and that copies share one value.
// Part 2 trains the README's Mlp (examples/mlp.h, 784-256-256-256-LayerNorm-10)
// with Adam under a cosine schedule, prints the test accuracy after each
// epoch, saves a training checkpoint each epoch (Ctrl-C saves too; --resume
// continues), then loads the checkpoint lazily into a fresh model and
// evaluates that again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "examples/data_parallel.h"
#include "examples/mlp.kindling.h"
#include "examples/train_classifier.h"
#include "examples/train_flags.h"
#include "kindling/core/param.h"
#include "kindling/module/initializer.h"
#include "kindling/module/module.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/threads.h"

namespace {

using kindling::Device;
using kindling::GetMemoryStats;
using kindling::Tensor;
namespace data = kindling::data;

std::string Live() {
  const kindling::MemoryStats stats = GetMemoryStats(Device::Cpu());
  return absl::StrFormat("%.1f MiB of tensor memory live",
                         stats.live_bytes / 1048576.0);
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
      static_cast<long long>(GetMemoryStats(Device::Cpu()).live_bytes -
                             before.live_bytes));
  std::printf("%s", kindling::ModuleToString(mlp).c_str());
}

Tensor<2> MlpLogits(const examples::Mlp& model, const data::Batch& batch,
                    kindling::nn::ForwardMode, kindling::PhiloxGenerator&) {
  return model.Forward(batch.images);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // --nproc=N: this process only launches N ranks of itself.
  if (std::optional<int> code = examples::LaunchRanksIfAsked(argc, argv)) {
    return *code;
  }
  absl::StatusOr<examples::Job> job = examples::JoinJob();
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 2;
  }
  kindling::train::SetCpuThreads(examples::ThreadsPerRank(*job));
  LazyTour();
  std::printf("\nPart 2: ");
  return examples::TrainClassifier<examples::Mlp>(
      "quickstart", *job,
      [](const Device& device) { return examples::MlpConfig{}.Init(device); },
      MlpLogits);
}
