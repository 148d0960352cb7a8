// The built-in update rules' fused CUDA kernels: one launch per parameter
// tensor, no temporaries, each element computed by update_math.h's formula,
// the CPU kernels' (optim/cpu/) to rounding (nvcc may fuse a multiply-add
// the CPU rounds twice). SGD and Adam/AdamW take every floating dtype (16-bit
// floats computed in f32); RMSprop and Lion take f32 and f64 and decline the
// 16-bit floats, which their rules then step with tensor ops, as on the CPU.
#include <cstdint>
#include <span>
#include <type_traits>

#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/backend/cuda/on_device.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/update_math.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::optim_cuda {
namespace {

using cuda::ComputeType;
using cuda::Convert;
using cuda::ToCompute;

// RoundTo<T>: update_math.h's `round` for state stored as T.
template <class T>
struct RoundTo {
  KINDLING_HOST_DEVICE ComputeType<T> operator()(ComputeType<T> x) const {
    if constexpr (std::is_same_v<T, ComputeType<T>>) {
      return x;
    } else {
      return ToCompute(Convert<T>(x));
    }
  }
};

// Data<T>() is a state tensor's elements, or nullptr when the rule's options
// leave it out.
template <class T>
T* Data(std::span<const TensorBase> state, size_t index, bool present) {
  return present ? state[index].data_as<T>() : nullptr;
}

// Launch() sets up the call (device, stream, stream use of every tensor)
// and runs `op` over the parameter's elements.
template <class Op>
void Launch(const char* kernel, const TensorBase& param, const TensorBase& grad,
            std::span<const TensorBase> state, const Op& op) {
  const cuda::OnDevice on(param, grad);
  for (const TensorBase& tensor : state) on.RecordUse(tensor);
  cuda::LaunchContiguous(kernel, on.stream(), param.numel(), op);
}

// --- SGD ---------------------------------------------------------------------

template <class T, bool kDecay, bool kMomentum, bool kNesterov>
struct SgdOp {
  update_math::SgdConstants<ComputeType<T>> s;
  T* param;
  const T* grad;
  T* buffer;
  __device__ void operator()(int64_t i) const {
    using C = ComputeType<T>;
    C b = kMomentum && !s.first_step ? ToCompute(buffer[i]) : C{0};
    const C p = update_math::Sgd<kDecay, kMomentum, kNesterov>(
        s, ToCompute(param[i]), ToCompute(grad[i]), b, RoundTo<T>{});
    if constexpr (kMomentum) buffer[i] = Convert<T>(b);
    param[i] = Convert<T>(p);
  }
};

bool SgdCuda(const SgdStep& step, const TensorBase& param,
             const TensorBase& grad, std::span<const TensorBase> state) {
  const bool momentum = step.momentum != 0;
  DispatchDType<kFloatingDTypes>(param.dtype(), "cuda sgd", [&]<class T>() {
    update_math::SelectFlags(
        step.weight_decay != 0, momentum, momentum && step.nesterov,
        [&]<bool kDecay, bool kMomentum, bool kNesterov>() {
          Launch("SgdOp", param, grad, state,
                 SgdOp<T, kDecay, kMomentum, kNesterov>{
                     update_math::SgdConstants<ComputeType<T>>(step),
                     param.data_as<T>(), grad.data_as<const T>(),
                     Data<T>(state, 0, momentum)});
        });
  });
  return true;
}

// --- Adam and AdamW ----------------------------------------------------------

template <class T, bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>
struct AdamOp {
  update_math::AdamConstants<ComputeType<T>> s;
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;
  __device__ void operator()(int64_t i) const {
    using C = ComputeType<T>;
    C m = ToCompute(exp_avg[i]);
    C v = ToCompute(exp_avg_sq[i]);
    C max_v = kAmsgrad ? ToCompute(max_exp_avg_sq[i]) : C{0};
    const C p = update_math::Adam<kL2Decay, kDecoupledDecay, kAmsgrad>(
        s, ToCompute(param[i]), ToCompute(grad[i]), m, v, max_v, RoundTo<T>{});
    exp_avg[i] = Convert<T>(m);
    exp_avg_sq[i] = Convert<T>(v);
    if constexpr (kAmsgrad) max_exp_avg_sq[i] = Convert<T>(max_v);
    param[i] = Convert<T>(p);
  }
};

bool AdamCuda(const AdamStep& step, const TensorBase& param,
              const TensorBase& grad, std::span<const TensorBase> state) {
  const bool decay = step.weight_decay != 0;
  DispatchDType<kFloatingDTypes>(param.dtype(), "cuda adam", [&]<class T>() {
    update_math::SelectFlags(
        decay && !step.decoupled_weight_decay,
        decay && step.decoupled_weight_decay, step.amsgrad,
        [&]<bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>() {
          Launch("AdamOp", param, grad, state,
                 AdamOp<T, kL2Decay, kDecoupledDecay, kAmsgrad>{
                     update_math::AdamConstants<ComputeType<T>>(step),
                     param.data_as<T>(), grad.data_as<const T>(),
                     state[0].data_as<T>(), state[1].data_as<T>(),
                     Data<T>(state, 2, step.amsgrad)});
        });
  });
  return true;
}

// --- RMSprop -----------------------------------------------------------------

template <class T, bool kDecay, bool kCentered, bool kMomentum>
struct RmsPropOp {
  update_math::RmsPropConstants<T> s;
  T* param;
  const T* grad;
  T* square_avg;
  T* buffer;
  T* grad_avg;
  __device__ void operator()(int64_t i) const {
    update_math::RmsPropAt<kDecay, kCentered, kMomentum>(
        s, i, param, grad, square_avg, buffer, grad_avg);
  }
};

bool RmsPropCuda(const RmsPropStep& step, const TensorBase& param,
                 const TensorBase& grad, std::span<const TensorBase> state) {
  if ((DTypeBit(param.dtype()) & kF32F64) == 0) return false;
  const bool momentum = step.momentum > 0;
  DispatchDType<kF32F64>(param.dtype(), "cuda rmsprop", [&]<class T>() {
    update_math::SelectFlags(
        step.weight_decay != 0, step.centered, momentum,
        [&]<bool kDecay, bool kCentered, bool kMomentum>() {
          Launch("RmsPropOp", param, grad, state,
                 RmsPropOp<T, kDecay, kCentered, kMomentum>{
                     update_math::RmsPropConstants<T>(step), param.data_as<T>(),
                     grad.data_as<const T>(), state[0].data_as<T>(),
                     Data<T>(state, 1, momentum),
                     Data<T>(state, state.size() - 1, step.centered)});
        });
  });
  return true;
}

// --- Lion --------------------------------------------------------------------

template <class T>
struct LionOp {
  update_math::LionConstants<T> s;
  T* param;
  const T* grad;
  T* exp_avg;
  __device__ void operator()(int64_t i) const {
    param[i] = update_math::Lion(s, param[i], grad[i], exp_avg[i],
                                 update_math::Exact{});
  }
};

bool LionCuda(const LionStep& step, const TensorBase& param,
              const TensorBase& grad, std::span<const TensorBase> state) {
  if ((DTypeBit(param.dtype()) & kF32F64) == 0) return false;
  DispatchDType<kF32F64>(param.dtype(), "cuda lion", [&]<class T>() {
    Launch("LionOp", param, grad, state,
           LionOp<T>{update_math::LionConstants<T>(step), param.data_as<T>(),
                     grad.data_as<const T>(), state[0].data_as<T>()});
  });
  return true;
}

const FusedUpdateRegistration<SgdStep> kSgd(DeviceKind::kCuda, &SgdCuda);
const FusedUpdateRegistration<AdamStep> kAdam(DeviceKind::kCuda, &AdamCuda);
const FusedUpdateRegistration<RmsPropStep> kRmsProp(DeviceKind::kCuda,
                                                    &RmsPropCuda);
const FusedUpdateRegistration<LionStep> kLion(DeviceKind::kCuda, &LionCuda);

}  // namespace
}  // namespace kindling::optim_cuda
