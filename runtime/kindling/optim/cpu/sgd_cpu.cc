// SGD's fused CPU kernel: update_math::Sgd in one pass over param, grad and
// the momentum buffer; f32, f64, and f16/bf16 computed in f32.
#include <cstdint>
#include <span>

#include "kindling/optim/cpu/cpu_update.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/update_math.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::optim_cpu {
namespace {

template <class T, bool kDecay, bool kMomentum, bool kNesterov>
void SgdRange(const update_math::SgdConstants<ComputeType<T>>& s,
              T* __restrict param, const T* __restrict grad,
              T* __restrict buffer, int64_t begin, int64_t end) {
  using C = ComputeType<T>;
  for (int64_t i = begin; i < end; ++i) {
    C b = kMomentum && !s.first_step ? Load(buffer[i]) : C{0};
    const C p = update_math::Sgd<kDecay, kMomentum, kNesterov>(
        s, Load(param[i]), Load(grad[i]), b, RoundTo<T>{});
    if constexpr (kMomentum) buffer[i] = Store<T>(b);
    param[i] = Store<T>(p);
  }
}

bool SgdCpu(const SgdStep& step, const TensorBase& param,
            const TensorBase& grad, std::span<const TensorBase> state) {
  const bool momentum = step.momentum != 0;
  DispatchDType<kFloatingDTypes>(param.dtype(), "cpu sgd", [&]<class T>() {
    const update_math::SgdConstants<ComputeType<T>> s(step);
    T* p = param.data_as<T>();
    const T* g = grad.data_as<const T>();
    T* b = momentum ? state[0].data_as<T>() : nullptr;
    update_math::SelectFlags(
        step.weight_decay != 0, momentum, momentum && step.nesterov,
        [&]<bool kDecay, bool kMomentum, bool kNesterov>() {
          ForEachChunk(param.numel(), [&](int64_t begin, int64_t end) {
            SgdRange<T, kDecay, kMomentum, kNesterov>(s, p, g, b, begin, end);
          });
        });
  });
  return true;
}

const FusedUpdateRegistration<SgdStep> kRegistered(DeviceKind::kCpu, &SgdCpu);

}  // namespace
}  // namespace kindling::optim_cpu
