#include "kindling/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "kindling/core/check.h"

namespace kindling {

LrSchedule LrSchedule::Constant() { return LrSchedule(Kind::kConstant); }

LrSchedule LrSchedule::Step(int64_t step_size, double gamma) {
  KINDLING_CHECK(step_size > 0, "LrSchedule::Step: step_size %d must be > 0",
                 step_size);
  LrSchedule schedule(Kind::kStep);
  schedule.steps_ = step_size;
  schedule.factor_ = gamma;
  return schedule;
}

LrSchedule LrSchedule::LinearWarmup(int64_t warmup_steps, double start_factor) {
  KINDLING_CHECK(warmup_steps > 0,
                 "LrSchedule::LinearWarmup: warmup_steps %d must be > 0",
                 warmup_steps);
  KINDLING_CHECK(start_factor > 0 && start_factor <= 1,
                 "LrSchedule::LinearWarmup: start_factor %g must be in (0, 1]",
                 start_factor);
  LrSchedule schedule(Kind::kLinearWarmup);
  schedule.steps_ = warmup_steps;
  schedule.factor_ = start_factor;
  return schedule;
}

LrSchedule LrSchedule::Cosine(int64_t total_steps, double min_lr) {
  KINDLING_CHECK(total_steps > 0,
                 "LrSchedule::Cosine: total_steps %d must be > 0", total_steps);
  LrSchedule schedule(Kind::kCosine);
  schedule.steps_ = total_steps;
  schedule.min_lr_ = min_lr;
  return schedule;
}

LrSchedule LrSchedule::Sequential(std::vector<LrSchedule> schedules,
                                  std::vector<int64_t> milestones) {
  KINDLING_CHECK(
      !schedules.empty() && milestones.size() + 1 == schedules.size(),
      "LrSchedule::Sequential: %d schedules need %d milestones, "
      "got %d",
      schedules.size(), schedules.size() - 1, milestones.size());
  for (size_t i = 0; i < milestones.size(); ++i) {
    KINDLING_CHECK(milestones[i] > (i == 0 ? 0 : milestones[i - 1]),
                   "LrSchedule::Sequential: milestone %d (%d) must be positive "
                   "and above the previous one",
                   i, milestones[i]);
  }
  LrSchedule schedule(Kind::kSequential);
  schedule.children_ = std::move(schedules);
  schedule.milestones_ = std::move(milestones);
  return schedule;
}

LrSchedule LrSchedule::CosineWithWarmup(int64_t warmup_steps,
                                        int64_t total_steps, double min_lr,
                                        double warmup_start_factor) {
  KINDLING_CHECK(warmup_steps > 0 && warmup_steps < total_steps,
                 "LrSchedule::CosineWithWarmup: need 0 < warmup_steps (%d) < "
                 "total_steps (%d)",
                 warmup_steps, total_steps);
  return Sequential({LinearWarmup(warmup_steps, warmup_start_factor),
                     Cosine(total_steps - warmup_steps, min_lr)},
                    {warmup_steps});
}

LrSchedule LrSchedule::Lambda(std::function<double(int64_t step)> factor) {
  KINDLING_CHECK(factor != nullptr, "LrSchedule::Lambda: factor is empty");
  LrSchedule schedule(Kind::kLambda);
  schedule.factor_of_step_ = std::move(factor);
  return schedule;
}

double LrSchedule::LearningRate(double base_lr, int64_t step) const {
  KINDLING_CHECK(step >= 0, "LrSchedule: step %d is negative", step);
  switch (kind_) {
    case Kind::kConstant:
      return base_lr;
    case Kind::kStep:
      return base_lr * std::pow(factor_, static_cast<double>(step / steps_));
    case Kind::kLinearWarmup: {
      const double progress =
          static_cast<double>(std::min(step, steps_)) / steps_;
      return base_lr * (factor_ + (1.0 - factor_) * progress);
    }
    case Kind::kCosine:
      return min_lr_ + (base_lr - min_lr_) *
                           (1 + std::cos(std::numbers::pi * step / steps_)) / 2;
    case Kind::kSequential: {
      // The last milestone at or below `step` picks the schedule.
      const size_t index = static_cast<size_t>(
          std::upper_bound(milestones_.begin(), milestones_.end(), step) -
          milestones_.begin());
      const int64_t start = index == 0 ? 0 : milestones_[index - 1];
      return children_[index].LearningRate(base_lr, step - start);
    }
    case Kind::kLambda: {
      const double factor = factor_of_step_(step);
      KINDLING_CHECK(std::isfinite(factor) && factor >= 0,
                     "LrSchedule::Lambda: factor(%d) is %g; it must be finite "
                     "and >= 0",
                     step, factor);
      return base_lr * factor;
    }
  }
  return base_lr;
}

}  // namespace kindling
