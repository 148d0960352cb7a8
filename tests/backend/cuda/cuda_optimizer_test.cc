// CudaBackend against the CPU backend: The fused SGD/Adam steps and the
// gradient-clipping norms. (tests/backend/cuda/backend_test_support.h says how
// cases compare.)
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

TEST_F(CudaBackendTest, SgdAndAdamStepsMatchTheCpu) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (int variant = 0; variant < 4; ++variant) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const Shape shape{1000, 7};
        const TensorBase param = Input(shape, dtype, 28, device);
        const TensorBase m = Input(shape, dtype, 29, device, 0, 0.1);
        const TensorBase v = Input(shape, dtype, 30, device, 0, 0.1);
        const TensorBase max_v = Input(shape, dtype, 31, device, 0, 0.1);
        for (int step = 1; step <= 3; ++step) {
          const TensorBase grad = Input(shape, dtype, 40 + step, device);
          if (variant < 2) {
            Backend::SgdUpdateScalars s;
            s.lr = 0.1;
            s.momentum = 0.9;
            s.dampening = 0.1;
            s.weight_decay = 0.01;
            s.nesterov = variant == 1;
            s.first_step = step == 1;
            GetBackend(device).SgdUpdate(param, grad, m, s);
          } else {
            Backend::AdamUpdateScalars s;
            s.lr = 0.01;
            s.beta1 = 0.9;
            s.beta2 = 0.999;
            s.eps = 1e-8;
            s.weight_decay = 0.05;
            s.decoupled_weight_decay = variant == 3;
            s.amsgrad = variant == 3;
            s.step_size = s.lr / (1 - std::pow(s.beta1, step));
            s.bias_correction2_sqrt = std::sqrt(1 - std::pow(s.beta2, step));
            GetBackend(device).AdamUpdate(param, grad, m, v, max_v, s);
          }
        }
        return param;
      });
      ExpectClose(
          cpu, gpu, ToleranceOf(dtype),
          "optimizer variant " + std::to_string(variant) + " " + Name(dtype));
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
