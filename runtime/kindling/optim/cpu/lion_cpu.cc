// Lion's fused CPU kernel: lion_rule.cc's formulas in one pass over param,
// grad and exp_avg, f32 and f64 (16-bit floats take the rule's tensor-op
// path).
#include <cstdint>
#include <span>

#include "kindling/backend/cpu/parallel.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {
namespace {

template <class T>
void LionTyped(const LionStep& s, const TensorBase& param,
               const TensorBase& grad, const TensorBase& exp_avg) {
  T* __restrict p = static_cast<T*>(param.data());
  const T* __restrict g = static_cast<const T*>(grad.data());
  T* __restrict m = static_cast<T*>(exp_avg.data());
  const T beta1 = static_cast<T>(s.beta1);
  const T one_minus_beta1 = static_cast<T>(1 - s.beta1);
  const T beta2 = static_cast<T>(s.beta2);
  const T one_minus_beta2 = static_cast<T>(1 - s.beta2);
  // 1 - lr * weight_decay is 1 exactly without decay, so the multiply
  // changes nothing then.
  const T decay = static_cast<T>(1 - s.lr * s.weight_decay);
  const T neg_lr = static_cast<T>(-s.lr);
  cpu::ParallelFor(
      param.numel(), cpu::kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const T c = m[i] * beta1 + g[i] * one_minus_beta1;
          const T sign = static_cast<T>(c > 0) - static_cast<T>(c < 0);
          p[i] = p[i] * decay + sign * neg_lr;
          m[i] = m[i] * beta2 + g[i] * one_minus_beta2;
        }
      });
}

bool LionCpu(const LionStep& step, const TensorBase& param,
             const TensorBase& grad, std::span<const TensorBase> state) {
  switch (param.dtype()) {
    case DType::kF32:
      LionTyped<float>(step, param, grad, state[0]);
      return true;
    case DType::kF64:
      LionTyped<double>(step, param, grad, state[0]);
      return true;
    default:
      return false;
  }
}

const FusedUpdateRegistration<LionStep> kRegistered(DeviceKind::kCpu, &LionCpu);

}  // namespace
}  // namespace kindling
