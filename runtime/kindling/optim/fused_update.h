// FusedUpdates<Step>: an update rule's own kernel table, one entry per
// device kind, outside the tensor layer's Backend.
//
// A rule that wants one pass over memory instead of a chain of tensor ops
// defines a Step (the scalars of one parameter's step) and looks its kernel
// up here; a device's kernel library registers it at static initialization
// (FusedUpdateRegistration). With no kernel for the device, or a kernel that
// declines the tensors (returns false: a dtype it lacks), the rule runs its
// tensor-op path, so a new rule needs no kernel at all to work everywhere.
// The built-in rules' kernels live in optim/cpu/ and optim/cuda/ and are
// linked with the device's backend; their element formulas are
// update_math.h's, shared by both. Register(device, nullptr) removes a
// kernel (tests use it to run a rule's tensor-op path).
#ifndef KINDLING_OPTIM_FUSED_UPDATE_H_
#define KINDLING_OPTIM_FUSED_UPDATE_H_

#include <array>
#include <atomic>
#include <span>

#include "kindling/core/check.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// CheckFusedOperands() aborts unless param, grad and every state tensor are
// contiguous and share one shape, dtype and device: what the optimizer
// guarantees a kernel (a broken guarantee is a bug, not an input error).
inline void CheckFusedOperands(const TensorBase& param, const TensorBase& grad,
                               std::span<const TensorBase> state) {
  const auto check = [&](const char* name, const TensorBase& tensor) {
    KINDLING_CHECK(tensor.defined() && tensor.is_contiguous() &&
                       tensor.dtype() == param.dtype() &&
                       tensor.shape() == param.shape() &&
                       tensor.device() == param.device(),
                   "fused optimizer update: %s is %s; the parameter is %s "
                   "(kernels take contiguous tensors of one shape, dtype and "
                   "device)",
                   name, tensor.defined() ? tensor.ToString() : "undefined",
                   param.ToString());
  };
  check("param", param);
  check("grad", grad);
  for (const TensorBase& tensor : state) check("a state tensor", tensor);
}

template <class Step>
class FusedUpdates {
 public:
  // Kernel: updates `param` and `state` (the rule's StateNames() tensors) in
  // place from `grad`, all contiguous and of one shape, dtype and device;
  // returns false, having written nothing, for tensors it does not handle.
  using Kernel = bool (*)(const Step& step, const TensorBase& param,
                          const TensorBase& grad,
                          std::span<const TensorBase> state);

  static void Register(DeviceKind device, Kernel kernel) {
    Table()[Index(device)].store(kernel, std::memory_order_release);
  }

  // Find(): the kernel registered for `device`, or nullptr.
  static Kernel Find(DeviceKind device) {
    return Table()[Index(device)].load(std::memory_order_acquire);
  }

  // Run(): the device's kernel on these tensors, or false when there is none
  // or it declined.
  static bool Run(const Step& step, const TensorBase& param,
                  const TensorBase& grad, std::span<const TensorBase> state) {
    const Kernel kernel = Find(param.device().type());
    if (kernel == nullptr) return false;
    CheckFusedOperands(param, grad, state);
    return kernel(step, param, grad, state);
  }

 private:
  static constexpr int kDeviceKinds = 2;  // DeviceKind::kCpu, kCuda
  static int Index(DeviceKind device) { return static_cast<int>(device); }
  static std::array<std::atomic<Kernel>, kDeviceKinds>& Table() {
    static std::array<std::atomic<Kernel>, kDeviceKinds> table{};
    return table;
  }
};

// FusedUpdateRegistration: a static object that registers a kernel.
//
//   const FusedUpdateRegistration<RmsPropStep> kRegistered(
//       DeviceKind::kCpu, &RmsPropCpu);
template <class Step>
struct FusedUpdateRegistration {
  FusedUpdateRegistration(DeviceKind device,
                          typename FusedUpdates<Step>::Kernel kernel) {
    FusedUpdates<Step>::Register(device, kernel);
  }
};

}  // namespace kindling

#endif  // KINDLING_OPTIM_FUSED_UPDATE_H_
