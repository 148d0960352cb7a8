// resume_tool: one half of the exact-resume test (resume_test.sh).
//
//   resume_tool --phase=first --out_dir=D --n=N --m=M
//     trains N steps and saves a training checkpoint in D, then goes on for
//     M more steps in the same process, printing each loss and the final
//     weights as hex floats;
//   resume_tool --phase=second --out_dir=D --n=N --m=M
//     starts a fresh process from a differently initialized model, loads D's
//     checkpoint and runs the same M steps, printing the same things.
// The test requires the two outputs to be identical.
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "kindling/train/classifier.h"
#include "kindling/train/threads.h"
#include "tests/train/tiny_run.h"

ABSL_FLAG(std::string, phase, "first", "first or second");
ABSL_FLAG(std::string, out_dir, "", "checkpoint directory");
ABSL_FLAG(int64_t, n, 10, "steps before the checkpoint");
ABSL_FLAG(int64_t, m, 12, "steps after it");
ABSL_FLAG(int, threads, 2, "CPU threads");

namespace {

namespace test = kindling::train_test;
using kindling::train::ClassifierTrainer;
using kindling::train::TrainerOptions;

int Run() {
  const std::string phase = absl::GetFlag(FLAGS_phase);
  const int64_t n = absl::GetFlag(FLAGS_n);
  const int64_t m = absl::GetFlag(FLAGS_m);
  // The second phase starts from other weights: the checkpoint must replace
  // them all.
  examples::Mlp model = test::TinyModel(phase == "first" ? 1 : 99);
  kindling::Optimizer optimizer = test::TinyOptimizer();
  kindling::data::DataLoader loader(test::TinyDataset(3),
                                    test::TinyLoaderOptions());
  TrainerOptions options{.epochs = 100,
                         .out_dir = absl::GetFlag(FLAGS_out_dir),
                         .dropout_seed = 11,
                         .progress = {.quiet = true}};
  std::string losses;
  auto record = [&losses](int64_t step, double loss) {
    losses += absl::StrFormat("step %d loss %a\n", step, loss);
  };
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  if (phase == "first") {
    trainer.options().max_steps = n;
    if (absl::StatusOr<kindling::train::TrainReport> report = trainer.Run();
        !report.ok()) {
      std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
      return 1;
    }
    trainer.options().out_dir.clear();  // keep the step-N checkpoint latest
  } else {
    trainer.options().resume = true;
  }
  trainer.options().max_steps = n + m;
  trainer.options().on_step = record;
  absl::StatusOr<kindling::train::TrainReport> report = trainer.Run();
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().ToString().c_str());
    return 1;
  }
  if (phase == "second" && report->resumed_from.empty()) {
    std::fprintf(stderr, "no checkpoint to resume from\n");
    return 1;
  }
  std::printf("%s%s", losses.c_str(), test::WeightsText(model).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  kindling::train::SetCpuThreads(absl::GetFlag(FLAGS_threads));
  return Run();
}
