// FusedUpdates<Step>: an update rule's own kernel table, one entry per
// device kind, outside the tensor layer's Backend.
//
// A rule that wants one pass over memory instead of a chain of tensor ops
// defines a Step (the scalars of one parameter's step) and looks its kernel
// up here; a device's kernel library registers it at static initialization
// (FusedUpdateRegistration). With no kernel for the device, or a kernel that
// declines the tensors (returns false: a dtype it lacks), the rule runs its
// tensor-op path, so a new rule needs no kernel at all to work everywhere.
// The CPU kernels of RMSprop and Lion live in optim/cpu/ and are linked with
// the CPU backend.
#ifndef KINDLING_OPTIM_FUSED_UPDATE_H_
#define KINDLING_OPTIM_FUSED_UPDATE_H_

#include <array>
#include <atomic>
#include <span>

#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

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

  // Run(): the device's kernel on these tensors, or false when there is none
  // or it declined.
  static bool Run(const Step& step, const TensorBase& param,
                  const TensorBase& grad, std::span<const TensorBase> state) {
    const Kernel kernel =
        Table()[Index(param.device().type())].load(std::memory_order_acquire);
    return kernel != nullptr && kernel(step, param, grad, state);
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
