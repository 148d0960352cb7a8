// ProgressPrinter: what a training run shows while it runs.
//
// On a terminal: one live line, redrawn at most 10 times a second,
//   epoch 2/5  step 123/469  loss 0.4312  21834 samples/s  ETA 1:02
// When stdout is not a terminal (CI logs, `| tee`): the same text as plain
// lines, one every `plain_interval_seconds`, so a log stays readable.
// Epoch summaries are always plain lines.
#ifndef KINDLING_TRAIN_PROGRESS_H_
#define KINDLING_TRAIN_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/functional/function_ref.h"

namespace kindling::train {

struct ProgressOptions {
  // live: redraw one line with '\r'. Default: whether stdout is a terminal.
  bool live = StdoutIsTerminal();
  double plain_interval_seconds = 10;
  // quiet: print nothing (tests, benchmarks).
  bool quiet = false;

  static bool StdoutIsTerminal();
};

class ProgressPrinter {
 public:
  // total_steps: steps of the whole run (for the ETA); steps_per_epoch for
  // the step/total display.
  ProgressPrinter(int64_t epochs, int64_t steps_per_epoch, int64_t total_steps,
                  ProgressOptions options, std::FILE* out = stdout);

  // StartEpoch() resets the epoch's rate clock.
  void StartEpoch();
  // OnStep() reports a finished step: `step_in_epoch` is 1-based, `step` is
  // the run's step count so far, `samples` the batch size. `loss` is called
  // only when a line is printed (reading a loss may synchronize a GPU).
  void OnStep(int64_t epoch, int64_t step_in_epoch, int64_t step,
              absl::FunctionRef<double()> loss, int64_t samples);
  // Line() prints a plain line (ending a live line first).
  void Line(const std::string& text);

 private:
  using Clock = std::chrono::steady_clock;
  bool Due(int64_t step_in_epoch) const;
  std::string StatusText(int64_t epoch, int64_t step_in_epoch, int64_t step,
                         double loss) const;

  int64_t epochs_;
  int64_t steps_per_epoch_;
  int64_t total_steps_;
  ProgressOptions options_;
  std::FILE* out_;
  bool live_line_open_ = false;
  Clock::time_point epoch_start_;
  Clock::time_point last_print_;
  int64_t epoch_samples_ = 0;
  int64_t epoch_steps_ = 0;
};

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_PROGRESS_H_
