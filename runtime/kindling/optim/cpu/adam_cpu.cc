// Adam's and AdamW's fused CPU kernel: update_math::Adam in one pass over
// param, grad and the moments; f32, f64, and f16/bf16 computed in f32;
// sixteen lanes wide where the CPU has AVX-512 (ForEachChunkWide), with the
// same bits as eight.
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

template <class T, bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>
[[gnu::always_inline]] inline void AdamRange(
    const update_math::AdamConstants<ComputeType<T>>& s, T* __restrict param,
    const T* __restrict grad, T* __restrict exp_avg, T* __restrict exp_avg_sq,
    T* __restrict max_exp_avg_sq, int64_t begin, int64_t end) {
  using C = ComputeType<T>;
  for (int64_t i = begin; i < end; ++i) {
    C m = Load(exp_avg[i]);
    C v = Load(exp_avg_sq[i]);
    C max_v = kAmsgrad ? Load(max_exp_avg_sq[i]) : C{0};
    const C p = update_math::Adam<kL2Decay, kDecoupledDecay, kAmsgrad>(
        s, Load(param[i]), Load(grad[i]), m, v, max_v, RoundTo<T>{});
    exp_avg[i] = Store<T>(m);
    exp_avg_sq[i] = Store<T>(v);
    if constexpr (kAmsgrad) max_exp_avg_sq[i] = Store<T>(max_v);
    param[i] = Store<T>(p);
  }
}

bool AdamCpu(const AdamStep& step, const TensorBase& param,
             const TensorBase& grad, std::span<const TensorBase> state) {
  const bool decay = step.weight_decay != 0;
  DispatchDType<kFloatingDTypes>(param.dtype(), "cpu adam", [&]<class T>() {
    const update_math::AdamConstants<ComputeType<T>> s(step);
    T* p = param.data_as<T>();
    const T* g = grad.data_as<const T>();
    T* m = state[0].data_as<T>();
    T* v = state[1].data_as<T>();
    T* max_v = step.amsgrad ? state[2].data_as<T>() : nullptr;
    update_math::SelectFlags(
        decay && !step.decoupled_weight_decay,
        decay && step.decoupled_weight_decay, step.amsgrad,
        [&]<bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>() {
          ForEachChunkWide(
              param.numel(),
              [&](int64_t begin, int64_t end) [[gnu::always_inline]] {
                AdamRange<T, kL2Decay, kDecoupledDecay, kAmsgrad>(
                    s, p, g, m, v, max_v, begin, end);
              },
              cpu::kHeavyElementGrain);
        });
  });
  return true;
}

const FusedUpdateRegistration<AdamStep> kRegistered(DeviceKind::kCpu, &AdamCpu);

}  // namespace
}  // namespace kindling::optim_cpu
