// The element formulas of the built-in update rules, written once as
// host-device functions: the CPU kernels (optim/cpu/) and the CUDA kernels
// (optim/cuda/) call these, so the devices cannot drift apart.
//
// Each function updates one element in its compute type C (float for f32,
// f16 and bf16 storage; double for f64) and follows PyTorch 1.13's
// single-tensor step operation by operation. `round` maps a C value to its
// storage precision and back (the identity when the state is stored in C):
// state written back is rounded before the formula reads it again, as
// PyTorch's, which lives in the parameter's dtype, is. The caller stores the
// returned parameter and the state it was handed.
//
// Options that change the formula's shape (weight decay on or off,
// momentum, Nesterov, centered, ...) are template flags, so each kernel's
// inner loop is straight-line code a compiler vectorizes;
// SelectFlags() turns run-time flags into them.
#ifndef KINDLING_OPTIM_UPDATE_MATH_H_
#define KINDLING_OPTIM_UPDATE_MATH_H_

#include <cmath>
#include <cstdint>

#include "kindling/optim/fused_steps.h"
#include "kindling/tensor/element_math.h"  // KINDLING_HOST_DEVICE

namespace kindling::update_math {

// SelectFlags() calls f.template operator()<a, b, c>() with run-time flags
// as template arguments (host code).
template <class F>
void SelectFlags(bool a, bool b, bool c, F&& f) {
  const auto with_c = [&]<bool kA, bool kB>() {
    c ? f.template operator()<kA, kB, true>()
      : f.template operator()<kA, kB, false>();
  };
  if (a) {
    b ? with_c.template operator()<true, true>()
      : with_c.template operator()<true, false>();
  } else {
    b ? with_c.template operator()<false, true>()
      : with_c.template operator()<false, false>();
  }
}

// Exact: the `round` of state stored in its compute type.
struct Exact {
  template <class C>
  KINDLING_HOST_DEVICE C operator()(C x) const {
    return x;
  }
};

// --- SGD ---------------------------------------------------------------------

// SgdConstants: SgdStep's scalars rounded to C once per tensor, as torch
// rounds a Python float multiplier.
template <class C>
struct SgdConstants {
  explicit SgdConstants(const SgdStep& s)
      : weight_decay(static_cast<C>(s.weight_decay)),
        momentum(static_cast<C>(s.momentum)),
        grad_weight(static_cast<C>(1 - s.dampening)),
        neg_lr(static_cast<C>(-s.lr)),
        first_step(s.first_step) {}
  C weight_decay;
  C momentum;
  C grad_weight;  // 1 - dampening
  C neg_lr;
  bool first_step;
};

// Sgd(): SgdStep's formula (fused_steps.h); `buffer` is read unless
// first_step and written when kMomentum.
template <bool kDecay, bool kMomentum, bool kNesterov, class C, class Round>
KINDLING_HOST_DEVICE inline C Sgd(const SgdConstants<C>& s, C p, C g, C& buffer,
                                  Round round) {
  if constexpr (kDecay) g = g + s.weight_decay * p;
  if constexpr (kMomentum) {
    buffer = round(s.first_step ? g : buffer * s.momentum + s.grad_weight * g);
    if constexpr (kNesterov) {
      g = g + s.momentum * buffer;
    } else {
      g = buffer;
    }
  }
  return p + s.neg_lr * g;
}

// --- Adam and AdamW ----------------------------------------------------------

template <class C>
struct AdamConstants {
  explicit AdamConstants(const AdamStep& s)
      : weight_decay(static_cast<C>(s.weight_decay)),
        decay_factor(static_cast<C>(1 - s.lr * s.weight_decay)),
        beta1(static_cast<C>(s.beta1)),
        one_minus_beta1(static_cast<C>(1 - s.beta1)),
        beta2(static_cast<C>(s.beta2)),
        one_minus_beta2(static_cast<C>(1 - s.beta2)),
        eps(static_cast<C>(s.eps)),
        neg_step_size(static_cast<C>(-s.step_size)),
        bias_correction2_sqrt(static_cast<C>(s.bias_correction2_sqrt)) {}
  C weight_decay;
  C decay_factor;  // 1 - lr * weight_decay
  C beta1;
  C one_minus_beta1;
  C beta2;
  C one_minus_beta2;
  C eps;
  C neg_step_size;
  C bias_correction2_sqrt;
};

// Adam(): AdamStep's formula; kL2Decay is Adam's weight decay,
// kDecoupledDecay AdamW's. `max_exp_avg_sq` is touched only when kAmsgrad.
template <bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad, class C,
          class Round>
KINDLING_HOST_DEVICE inline C Adam(const AdamConstants<C>& s, C p, C g,
                                   C& exp_avg, C& exp_avg_sq, C& max_exp_avg_sq,
                                   Round round) {
  using std::sqrt;
  if constexpr (kL2Decay) g = g + s.weight_decay * p;
  if constexpr (kDecoupledDecay) p = p * s.decay_factor;
  exp_avg = round(exp_avg * s.beta1 + s.one_minus_beta1 * g);
  exp_avg_sq = round(exp_avg_sq * s.beta2 + s.one_minus_beta2 * g * g);
  C v = exp_avg_sq;
  if constexpr (kAmsgrad) {
    v = max_exp_avg_sq > v ? max_exp_avg_sq : v;
    max_exp_avg_sq = v;
  }
  const C denom = sqrt(v) / s.bias_correction2_sqrt + s.eps;
  return p + s.neg_step_size * (exp_avg / denom);
}

// --- RMSprop -----------------------------------------------------------------

template <class C>
struct RmsPropConstants {
  explicit RmsPropConstants(const RmsPropStep& s)
      : alpha(static_cast<C>(s.alpha)),
        one_minus_alpha(static_cast<C>(1 - s.alpha)),
        weight_decay(static_cast<C>(s.weight_decay)),
        eps(static_cast<C>(s.eps)),
        momentum(static_cast<C>(s.momentum)),
        neg_lr(static_cast<C>(-s.lr)) {}
  C alpha;
  C one_minus_alpha;
  C weight_decay;
  C eps;
  C momentum;
  C neg_lr;
};

// RmsProp(): rmsprop_rule.cc's formula; `buffer` is touched only when
// kMomentum, `grad_avg` only when kCentered.
template <bool kDecay, bool kCentered, bool kMomentum, class C, class Round>
KINDLING_HOST_DEVICE inline C RmsProp(const RmsPropConstants<C>& s, C p, C g,
                                      C& square_avg, C& buffer, C& grad_avg,
                                      Round round) {
  using std::sqrt;
  if constexpr (kDecay) g = g + s.weight_decay * p;
  square_avg = round(square_avg * s.alpha + s.one_minus_alpha * g * g);
  C avg;
  if constexpr (kCentered) {
    grad_avg = round(grad_avg * s.alpha + s.one_minus_alpha * g);
    avg = sqrt(square_avg - grad_avg * grad_avg) + s.eps;
  } else {
    avg = sqrt(square_avg) + s.eps;
  }
  if constexpr (kMomentum) {
    buffer = round(buffer * s.momentum + g / avg);
    return p + s.neg_lr * buffer;
  } else {
    return p + s.neg_lr * (g / avg);
  }
}

// RmsPropAt() is RmsProp() on element i of f32 or f64 arrays (state stored
// in the compute type, so no rounding); `buffer` and `grad_avg` may be null
// when their flag is off.
template <bool kDecay, bool kCentered, bool kMomentum, class T>
KINDLING_HOST_DEVICE inline void RmsPropAt(const RmsPropConstants<T>& s,
                                           int64_t i, T* param, const T* grad,
                                           T* square_avg, T* buffer,
                                           T* grad_avg) {
  T b = kMomentum ? buffer[i] : T{0};
  T ga = kCentered ? grad_avg[i] : T{0};
  param[i] = RmsProp<kDecay, kCentered, kMomentum>(
      s, param[i], grad[i], square_avg[i], b, ga, Exact{});
  if constexpr (kMomentum) buffer[i] = b;
  if constexpr (kCentered) grad_avg[i] = ga;
}

// --- Lion --------------------------------------------------------------------

template <class C>
struct LionConstants {
  explicit LionConstants(const LionStep& s)
      : beta1(static_cast<C>(s.beta1)),
        one_minus_beta1(static_cast<C>(1 - s.beta1)),
        beta2(static_cast<C>(s.beta2)),
        one_minus_beta2(static_cast<C>(1 - s.beta2)),
        decay(static_cast<C>(1 - s.lr * s.weight_decay)),
        neg_lr(static_cast<C>(-s.lr)) {}
  C beta1;
  C one_minus_beta1;
  C beta2;
  C one_minus_beta2;
  // 1 - lr * weight_decay is 1 exactly without decay, so the multiply
  // changes nothing then.
  C decay;
  C neg_lr;
};

// Lion(): lion_rule.cc's formula; sign(0) is 0, as torch.sign's.
template <class C, class Round>
KINDLING_HOST_DEVICE inline C Lion(const LionConstants<C>& s, C p, C g,
                                   C& exp_avg, Round round) {
  const C c = exp_avg * s.beta1 + g * s.one_minus_beta1;
  const C sign = static_cast<C>(c > C{0}) - static_cast<C>(c < C{0});
  exp_avg = round(exp_avg * s.beta2 + g * s.one_minus_beta2);
  return p * s.decay + sign * s.neg_lr;
}

}  // namespace kindling::update_math

#endif  // KINDLING_OPTIM_UPDATE_MATH_H_
