#include "kindling/train/progress.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"

namespace kindling::train {
namespace {

std::string Duration(double seconds) {
  const int64_t total = static_cast<int64_t>(seconds + 0.5);
  if (total >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", total / 3600, total / 60 % 60,
                           total % 60);
  }
  return absl::StrFormat("%d:%02d", total / 60, total % 60);
}

}  // namespace

bool ProgressOptions::StdoutIsTerminal() { return isatty(STDOUT_FILENO) != 0; }

ProgressPrinter::ProgressPrinter(int64_t epochs, int64_t steps_per_epoch,
                                 int64_t total_steps, ProgressOptions options,
                                 std::FILE* out)
    : epochs_(epochs),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps),
      options_(options),
      out_(out) {
  StartEpoch();
}

void ProgressPrinter::StartEpoch() {
  epoch_start_ = Clock::now();
  last_print_ = epoch_start_;
  epoch_samples_ = 0;
  epoch_steps_ = 0;
}

std::string ProgressPrinter::StatusText(int64_t epoch, int64_t step_in_epoch,
                                        int64_t step, double loss) const {
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - epoch_start_).count();
  const double rate = elapsed > 0 ? epoch_samples_ / elapsed : 0;
  const double seconds_per_step = epoch_steps_ > 0 ? elapsed / epoch_steps_ : 0;
  const int64_t steps_left = total_steps_ > step ? total_steps_ - step : 0;
  return absl::StrFormat(
      "epoch %d/%d  step %d/%d  loss %.4f  %.0f samples/s  ETA %s", epoch + 1,
      epochs_, step_in_epoch, steps_per_epoch_, loss, rate,
      Duration(seconds_per_step * steps_left));
}

// Due() is whether a step's line is due now.
bool ProgressPrinter::Due(int64_t step_in_epoch) const {
  if (options_.quiet) return false;
  const double since =
      std::chrono::duration<double>(Clock::now() - last_print_).count();
  if (options_.live) return since >= 0.1 || step_in_epoch == steps_per_epoch_;
  return since >= options_.plain_interval_seconds;
}

void ProgressPrinter::OnStep(int64_t epoch, int64_t step_in_epoch, int64_t step,
                             absl::FunctionRef<double()> loss,
                             int64_t samples) {
  epoch_samples_ += samples;
  ++epoch_steps_;
  if (!Due(step_in_epoch)) return;
  const Clock::time_point now = Clock::now();
  if (options_.live) {
    std::fprintf(out_, "\r\033[K%s",
                 StatusText(epoch, step_in_epoch, step, loss()).c_str());
    std::fflush(out_);
    live_line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n",
                 StatusText(epoch, step_in_epoch, step, loss()).c_str());
    std::fflush(out_);
  }
  last_print_ = now;
}

void ProgressPrinter::Line(const std::string& text) {
  if (options_.quiet) return;
  if (live_line_open_) {
    std::fprintf(out_, "\r\033[K");
    live_line_open_ = false;
  }
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace kindling::train
