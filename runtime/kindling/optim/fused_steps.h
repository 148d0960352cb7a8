// The scalars of one parameter's step, per built-in rule: what sgd_rule.cc,
// adam_rule.cc, rmsprop_rule.cc and lion_rule.cc hand to a device's fused
// kernel (fused_update.h), which computes exactly their formulas
// (update_math.h). Each names the state tensors the kernel receives, in the
// rule's StateNames() order.
#ifndef KINDLING_OPTIM_FUSED_STEPS_H_
#define KINDLING_OPTIM_FUSED_STEPS_H_

namespace kindling {

// SgdStep (PyTorch's names): state is {momentum_buffer} when momentum != 0.
// With g = grad + weight_decay * param,
//   buf   = first_step ? g : momentum * buf + (1 - dampening) * g
//   g     = nesterov ? g + momentum * buf : buf      (when momentum != 0)
//   param = param - lr * g
struct SgdStep {
  double lr = 0;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  // first_step: the momentum buffer holds no history yet and is set to the
  // (decayed) gradient, as PyTorch does on a parameter's first step.
  bool first_step = false;
};

// AdamStep: state is {exp_avg, exp_avg_sq, max_exp_avg_sq if amsgrad}.
//   g = grad (+ weight_decay * param for Adam)
//   param *= 1 - lr * weight_decay                      (AdamW)
//   exp_avg    = beta1 * exp_avg + (1 - beta1) * g
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g
//   v = amsgrad ? (max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq))
//               : exp_avg_sq
//   param -= step_size * exp_avg / (sqrt(v) / bias_correction2_sqrt + eps)
struct AdamStep {
  double lr = 0;
  double beta1 = 0;
  double beta2 = 0;
  double eps = 0;
  double weight_decay = 0;
  // decoupled_weight_decay: AdamW (param *= 1 - lr * weight_decay) instead
  // of Adam's L2 term added to the gradient.
  bool decoupled_weight_decay = false;
  bool amsgrad = false;
  // The bias corrections depend only on the step count, so the rule
  // computes them once per tensor: step_size = lr / (1 - beta1^step),
  // bias_correction2_sqrt = sqrt(1 - beta2^step).
  double step_size = 0;
  double bias_correction2_sqrt = 1;
};

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
