// The scalars of one parameter's step for the rules that have fused kernels
// (fused_update.h): what rmsprop_rule.cc and lion_rule.cc hand to a device's
// kernel, which computes exactly their formulas.
#ifndef KINDLING_OPTIM_FUSED_STEPS_H_
#define KINDLING_OPTIM_FUSED_STEPS_H_

namespace kindling {

// RmsPropStep: state is {square_avg, momentum_buffer if momentum > 0,
// grad_avg if centered}.
struct RmsPropStep {
  double lr = 0;
  double alpha = 0;
  double eps = 0;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

// LionStep: state is {exp_avg}.
struct LionStep {
  double lr = 0;
  double beta1 = 0;
  double beta2 = 0;
  double weight_decay = 0;
};

}  // namespace kindling

#endif  // KINDLING_OPTIM_FUSED_STEPS_H_
