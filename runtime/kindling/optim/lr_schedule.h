// LrSchedule: the learning rate as a function of the optimizer step, with
// PyTorch's schedulers' formulas (torch.optim.lr_scheduler), so a recipe's
// schedule transfers:
//
//   StepLR(step_size, gamma)            LrSchedule::Step(step_size, gamma)
//   LinearLR(start_factor, 1.0, iters)  LrSchedule::LinearWarmup(iters, ...)
//   CosineAnnealingLR(T_max, eta_min)   LrSchedule::Cosine(T_max, eta_min)
//   SequentialLR([a, b], [m])           LrSchedule::Sequential({a, b}, {m})
//   LambdaLR(lr_lambda)                 LrSchedule::Lambda(factor)
//
// A schedule is a pure function of (base_lr, step): LearningRate(base_lr, t)
// is the rate of the optimizer step that starts after t completed steps (what
// PyTorch's optimizer uses after t calls of scheduler.step()). base_lr is each
// parameter group's own lr, as PyTorch's schedulers scale each group's
// initial lr. Being stateless, a schedule needs no checkpointing: the
// optimizer's saved step count restores it.
//
//   optimizer.set_schedule(kindling::LrSchedule::CosineWithWarmup(
//       /*warmup_steps=*/100, /*total_steps=*/10000, /*min_lr=*/1e-5));
//
// The factories check their arguments (KINDLING_CHECK): a schedule is
// program configuration, and a bad one is a programming error.
#ifndef KINDLING_OPTIM_LR_SCHEDULE_H_
#define KINDLING_OPTIM_LR_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace kindling {

class LrSchedule {
 public:
  // Constant() is base_lr at every step (the default).
  static LrSchedule Constant();

  // Step() is base_lr * gamma^(floor(step / step_size)).
  // REQUIRES: step_size > 0.
  static LrSchedule Step(int64_t step_size, double gamma = 0.1);

  // LinearWarmup() ramps the factor linearly from start_factor at step 0 to
  // 1 at warmup_steps and stays there (LinearLR with end_factor 1).
  // REQUIRES: warmup_steps > 0, 0 < start_factor <= 1.
  static LrSchedule LinearWarmup(int64_t warmup_steps,
                                 double start_factor = 1.0 / 3);

  // Cosine() is min_lr + (base_lr - min_lr) * (1 + cos(pi * step /
  // total_steps)) / 2 (CosineAnnealingLR; past total_steps it continues the
  // cosine, as PyTorch's does). REQUIRES: total_steps > 0.
  static LrSchedule Cosine(int64_t total_steps, double min_lr = 0);

  // Sequential() runs schedules[i] from milestones[i - 1] on, its step
  // counted from that milestone (SequentialLR).
  // REQUIRES: milestones.size() == schedules.size() - 1, strictly increasing
  // and positive.
  static LrSchedule Sequential(std::vector<LrSchedule> schedules,
                               std::vector<int64_t> milestones);

  // CosineWithWarmup() is Sequential({LinearWarmup(warmup_steps,
  // warmup_start_factor), Cosine(total_steps - warmup_steps, min_lr)},
  // {warmup_steps}): a linear ramp to base_lr, then a cosine decay reaching
  // min_lr at total_steps. REQUIRES: 0 < warmup_steps < total_steps.
  static LrSchedule CosineWithWarmup(int64_t warmup_steps, int64_t total_steps,
                                     double min_lr = 0,
                                     double warmup_start_factor = 1.0 / 3);

  // Lambda() is base_lr * factor(step): any schedule the factories above do
  // not cover (LambdaLR). `factor` must be a pure function of the step (the
  // optimizer's saved step count is all a checkpoint restores) and safe to
  // call from several threads if the optimizer is; a factor that is negative
  // or not finite aborts, naming the step. REQUIRES: factor is callable.
  static LrSchedule Lambda(std::function<double(int64_t step)> factor);

  // LearningRate() is the rate of the step after `step` completed steps.
  // REQUIRES: step >= 0.
  double LearningRate(double base_lr, int64_t step) const;

 private:
  enum class Kind {
    kConstant,
    kStep,
    kLinearWarmup,
    kCosine,
    kSequential,
    kLambda
  };

  explicit LrSchedule(Kind kind) : kind_(kind) {}

  Kind kind_;
  int64_t steps_ = 0;    // step_size, warmup_steps or total_steps
  double factor_ = 1.0;  // gamma or start_factor
  double min_lr_ = 0;
  std::vector<LrSchedule> children_;
  std::vector<int64_t> milestones_;
  std::function<double(int64_t)> factor_of_step_;  // kLambda
};

}  // namespace kindling

#endif  // KINDLING_OPTIM_LR_SCHEDULE_H_
