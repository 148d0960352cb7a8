// StepPhases: where a training run's steps spent their time, phase by
// phase (TrainerOptions::time_phases), and PhaseClock, which adds one
// stretch of a phase to it.
//
//   TrainerOptions options{.epochs = 1, .time_phases = true};
//   ...
//   absl::StatusOr<TrainReport> report = trainer.Run();
//   const StepPhases& phases = report->phases;
//   // phases.optimizer / report->train_seconds: the optimizer's share.
//
// Times are the host's wall-clock seconds. On the CPU every op runs before
// it returns, so each phase's time is its work; on a GPU the ops are only
// queued, so a phase's time is the host's share of it, and the device's
// work shows wherever the host next waits for it.
#ifndef KINDLING_TRAIN_STEP_PHASES_H_
#define KINDLING_TRAIN_STEP_PHASES_H_

#include <chrono>

namespace kindling::train {

// StepPhases: seconds summed over the steps of one Trainer::Run(). What is
// left of the run's train_seconds is the loop's own work: reading losses
// back, progress, stop checks and checkpoints between steps.
struct StepPhases {
  double data = 0;       // the loader's next batch (waiting for it included)
  double forward = 0;    // the step function: forward and loss
  double backward = 0;   // Backward() (and the ranks' gradient all-reduce)
  double optimizer = 0;  // Optimizer::Step()

  double total() const { return data + forward + backward + optimizer; }
};

// PhaseClock adds the wall-clock seconds from its construction to its
// destruction to `*seconds`; with a null `seconds` it reads no clock.
class PhaseClock {
 public:
  explicit PhaseClock(double* seconds)
      : seconds_(seconds),
        start_(seconds != nullptr ? Clock::now() : Clock::time_point{}) {}
  ~PhaseClock() {
    if (seconds_ != nullptr) {
      *seconds_ += std::chrono::duration<double>(Clock::now() - start_).count();
    }
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  double* seconds_;
  Clock::time_point start_;
};

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_STEP_PHASES_H_
