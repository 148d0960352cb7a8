// The update rules' fused CUDA kernels (optim/cuda/) against their CPU
// kernels, and CudaBackend's gradient-clipping norms against the CPU's.
// (tests/backend/cuda/backend_test_support.h says how cases compare.)
#include <cmath>
#include <initializer_list>
#include <limits>
#include <span>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/core/check.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

// RunStep() runs `step` through the device's fused kernel (optim/cuda/ on
// the GPU, optim/cpu/ on the CPU); false when the kernel declines the dtype.
template <class Step>
bool RunStep(const Step& step, const TensorBase& param, const TensorBase& grad,
             std::initializer_list<TensorBase> state) {
  return FusedUpdates<Step>::Run(step, param, grad,
                                 std::span(state.begin(), state.size()));
}

// Every rule's CUDA kernel against its CPU kernel over three steps, for each
// option that changes the formula. RMSprop and Lion have f32/f64 kernels
// only, on both devices.
TEST_F(CudaBackendTest, FusedUpdateRulesMatchTheCpu) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (int variant = 0; variant < 7; ++variant) {
      const bool wide = dtype == DType::kF32 || dtype == DType::kF64;
      if (variant >= 4 && !wide) continue;
      auto [cpu, gpu] = Both([&](const Device& device) {
        const Shape shape{1000, 7};
        const TensorBase param = Input(shape, dtype, 28, device);
        const TensorBase m = Input(shape, dtype, 29, device, 0, 0.1);
        const TensorBase v = Input(shape, dtype, 30, device, 0, 0.1);
        const TensorBase max_v = Input(shape, dtype, 31, device, 0, 0.1);
        const TensorBase grad_avg = Input(shape, dtype, 32, device, 0, 0);
        for (int step = 1; step <= 3; ++step) {
          const TensorBase grad = Input(shape, dtype, 40 + step, device);
          bool ran = false;
          if (variant < 2) {
            const SgdStep s{.lr = 0.1,
                            .momentum = 0.9,
                            .dampening = 0.1,
                            .weight_decay = 0.01,
                            .nesterov = variant == 1,
                            .first_step = step == 1};
            ran = RunStep(s, param, grad, {m});
          } else if (variant < 4) {
            AdamStep s{.lr = 0.01,
                       .beta1 = 0.9,
                       .beta2 = 0.999,
                       .eps = 1e-8,
                       .weight_decay = 0.05,
                       .decoupled_weight_decay = variant == 3,
                       .amsgrad = variant == 3};
            s.step_size = s.lr / (1 - std::pow(s.beta1, step));
            s.bias_correction2_sqrt = std::sqrt(1 - std::pow(s.beta2, step));
            ran = variant == 3 ? RunStep(s, param, grad, {m, v, max_v})
                               : RunStep(s, param, grad, {m, v});
          } else if (variant < 6) {
            // v, the square average, is positive and the centered grad
            // average starts at zero, so square_avg - grad_avg^2 stays >= 0.
            const RmsPropStep s{.lr = 0.01,
                                .alpha = 0.9,
                                .eps = 1e-8,
                                .weight_decay = 0.05,
                                .momentum = variant == 5 ? 0.8 : 0.0,
                                .centered = variant == 5};
            ran = variant == 5 ? RunStep(s, param, grad, {v, m, grad_avg})
                               : RunStep(s, param, grad, {v});
          } else {
            const LionStep s{
                .lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.5};
            ran = RunStep(s, param, grad, {m});
          }
          KINDLING_CHECK(ran, "variant %d: no kernel on %s", variant,
                         device.ToString());
        }
        return param;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "update rule variant " + std::to_string(variant) + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, AbsPowerSumAndScaleClamp) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16}) {
    for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
      const TensorBase cpu = Input({123457}, dtype, 50, kCpu);
      const double expected = GetBackend(kCpu).AbsPowerSum(cpu, p);
      const double actual = GetBackend(kGpu).AbsPowerSum(cpu.ToDevice(kGpu), p);
      EXPECT_NEAR(expected, actual, 1e-9 * std::fabs(expected))
          << Name(dtype) << " p " << p;
    }
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase inout = Input({10007}, dtype, 51, device);
      GetBackend(device).ScaleClamp(inout, 0.75, 1.0);
      return inout;
    });
    ExpectClose(cpu, gpu, ToleranceOf(dtype), "scale_clamp " + Name(dtype));
  }
}

}  // namespace
}  // namespace kindling::cuda_test
