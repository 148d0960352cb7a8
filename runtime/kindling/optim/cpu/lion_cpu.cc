// Lion's fused CPU kernel: update_math::Lion in one pass over param, grad
// and exp_avg, f32 and f64 (16-bit floats take the rule's tensor-op path,
// which rounds after every operation).
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

bool LionCpu(const LionStep& step, const TensorBase& param,
             const TensorBase& grad, std::span<const TensorBase> state) {
  if ((DTypeBit(param.dtype()) & kF32F64) == 0) return false;
  DispatchDType<kF32F64>(param.dtype(), "cpu lion", [&]<class T>() {
    const update_math::LionConstants<T> s(step);
    T* __restrict p = param.data_as<T>();
    const T* __restrict g = grad.data_as<const T>();
    T* __restrict m = state[0].data_as<T>();
    ForEachChunk(param.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        p[i] = update_math::Lion(s, p[i], g[i], m[i], update_math::Exact{});
      }
    });
  });
  return true;
}

const FusedUpdateRegistration<LionStep> kRegistered(DeviceKind::kCpu, &LionCpu);

}  // namespace
}  // namespace kindling::optim_cpu
