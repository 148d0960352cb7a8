// RMSprop's fused CPU kernel: rmsprop_rule.cc's formulas in one pass over
// param, grad and state, f32 and f64 (16-bit floats take the rule's
// tensor-op path). The per-tensor options are template parameters, so the
// inner loop is straight-line code gcc vectorizes.
#include <cmath>
#include <cstdint>
#include <span>

#include "kindling/backend/cpu/parallel.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {
namespace {

template <class T, bool kDecay, bool kCentered, bool kMomentum>
void RmsPropRange(const RmsPropStep& s, T* __restrict param,
                  const T* __restrict grad, T* __restrict square_avg,
                  T* __restrict buffer, T* __restrict grad_avg, int64_t begin,
                  int64_t end) {
  const T alpha = static_cast<T>(s.alpha);
  const T one_minus_alpha = static_cast<T>(1 - s.alpha);
  const T weight_decay = static_cast<T>(s.weight_decay);
  const T eps = static_cast<T>(s.eps);
  const T momentum = static_cast<T>(s.momentum);
  const T neg_lr = static_cast<T>(-s.lr);
  for (int64_t i = begin; i < end; ++i) {
    T g = grad[i];
    if constexpr (kDecay) g = g + weight_decay * param[i];
    const T sq = square_avg[i] * alpha + one_minus_alpha * g * g;
    square_avg[i] = sq;
    T avg;
    if constexpr (kCentered) {
      const T ga = grad_avg[i] * alpha + one_minus_alpha * g;
      grad_avg[i] = ga;
      avg = std::sqrt(sq - ga * ga) + eps;
    } else {
      avg = std::sqrt(sq) + eps;
    }
    if constexpr (kMomentum) {
      const T b = buffer[i] * momentum + g / avg;
      buffer[i] = b;
      param[i] = param[i] + neg_lr * b;
    } else {
      param[i] = param[i] + neg_lr * (g / avg);
    }
  }
}

template <class T, bool kDecay, bool kCentered, bool kMomentum>
void RmsPropTyped(const RmsPropStep& s, const TensorBase& param,
                  const TensorBase& grad, std::span<const TensorBase> state) {
  T* p = static_cast<T*>(param.data());
  const T* g = static_cast<const T*>(grad.data());
  T* sq = static_cast<T*>(state[0].data());
  T* buffer = kMomentum ? static_cast<T*>(state[1].data()) : nullptr;
  T* grad_avg = kCentered ? static_cast<T*>(state.back().data()) : nullptr;
  cpu::ParallelFor(param.numel(), cpu::kElementGrain,
                   [&](int64_t begin, int64_t end) {
                     RmsPropRange<T, kDecay, kCentered, kMomentum>(
                         s, p, g, sq, buffer, grad_avg, begin, end);
                   });
}

template <class T>
void RmsPropDispatch(const RmsPropStep& s, const TensorBase& param,
                     const TensorBase& grad,
                     std::span<const TensorBase> state) {
  const bool decay = s.weight_decay != 0;
  const bool momentum = s.momentum > 0;
  if (decay) {
    if (s.centered) {
      momentum ? RmsPropTyped<T, true, true, true>(s, param, grad, state)
               : RmsPropTyped<T, true, true, false>(s, param, grad, state);
    } else {
      momentum ? RmsPropTyped<T, true, false, true>(s, param, grad, state)
               : RmsPropTyped<T, true, false, false>(s, param, grad, state);
    }
  } else {
    if (s.centered) {
      momentum ? RmsPropTyped<T, false, true, true>(s, param, grad, state)
               : RmsPropTyped<T, false, true, false>(s, param, grad, state);
    } else {
      momentum ? RmsPropTyped<T, false, false, true>(s, param, grad, state)
               : RmsPropTyped<T, false, false, false>(s, param, grad, state);
    }
  }
}

bool RmsPropCpu(const RmsPropStep& step, const TensorBase& param,
                const TensorBase& grad, std::span<const TensorBase> state) {
  switch (param.dtype()) {
    case DType::kF32:
      RmsPropDispatch<float>(step, param, grad, state);
      return true;
    case DType::kF64:
      RmsPropDispatch<double>(step, param, grad, state);
      return true;
    default:
      return false;
  }
}

const FusedUpdateRegistration<RmsPropStep> kRegistered(DeviceKind::kCpu,
                                                       &RmsPropCpu);

}  // namespace
}  // namespace kindling
