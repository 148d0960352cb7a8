// RMSprop's fused CPU kernel: update_math::RmsProp in one pass over param,
// grad and state, f32 and f64 (16-bit floats take the rule's tensor-op path,
// which rounds after every operation as PyTorch's does).
#include <cstdint>
#include <span>

#include "kindling/optim/cpu/cpu_update.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/update_math.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::optim_cpu {
namespace {

template <class T, bool kDecay, bool kCentered, bool kMomentum>
void RmsPropRange(const update_math::RmsPropConstants<T>& s,
                  T* __restrict param, const T* __restrict grad,
                  T* __restrict square_avg, T* __restrict buffer,
                  T* __restrict grad_avg, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    update_math::RmsPropAt<kDecay, kCentered, kMomentum>(
        s, i, param, grad, square_avg, buffer, grad_avg);
  }
}

bool RmsPropCpu(const RmsPropStep& step, const TensorBase& param,
                const TensorBase& grad, std::span<const TensorBase> state) {
  if ((DTypeBit(param.dtype()) & kF32F64) == 0) return false;
  const bool momentum = step.momentum > 0;
  DispatchDType<kF32F64>(param.dtype(), "cpu rmsprop", [&]<class T>() {
    const update_math::RmsPropConstants<T> s(step);
    T* p = param.data_as<T>();
    const T* g = grad.data_as<const T>();
    T* square_avg = state[0].data_as<T>();
    T* buffer = momentum ? state[1].data_as<T>() : nullptr;
    T* grad_avg = step.centered ? state.back().data_as<T>() : nullptr;
    update_math::SelectFlags(
        step.weight_decay != 0, step.centered, momentum,
        [&]<bool kDecay, bool kCentered, bool kMomentum>() {
          ForEachChunk(
              param.numel(),
              [&](int64_t begin, int64_t end) {
                RmsPropRange<T, kDecay, kCentered, kMomentum>(
                    s, p, g, square_avg, buffer, grad_avg, begin, end);
              },
              cpu::kHeavyElementGrain);
        });
  });
  return true;
}

const FusedUpdateRegistration<RmsPropStep> kRegistered(DeviceKind::kCpu,
                                                       &RmsPropCpu);

}  // namespace
}  // namespace kindling::optim_cpu
