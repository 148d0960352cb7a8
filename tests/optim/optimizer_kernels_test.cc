// The CPU's optimizer kernels on tensors large enough for the parallel path
// (several OpenMP chunks), against scalar formulas computed here in f64: the
// SGD and Adam update rules' fused kernels (optim/fused_update.h) and the
// Backend's gradient-clipping kernels.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor.h"

namespace {

using ::kindling::AdamStep;
using ::kindling::Backend;
using ::kindling::Device;
using ::kindling::FusedUpdates;
using ::kindling::GetBackend;
using ::kindling::SgdStep;
using ::kindling::Tensor;
using ::kindling::TensorBase;

constexpr int64_t kCount = 300'001;  // > 4 chunks of 64K, odd tail

std::vector<float> Wave(int64_t count, float scale, float phase) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = scale * std::sin(0.001f * static_cast<float>(i) + phase);
  }
  return values;
}

TEST(OptimizerKernelsTest, AdamKernelMatchesTheFormulaEverywhere) {
  const std::vector<float> param0 = Wave(kCount, 1.0f, 0.3f);
  const std::vector<float> grad0 = Wave(kCount, 0.5f, 1.1f);
  const std::vector<float> m0 = Wave(kCount, 0.1f, 2.0f);
  std::vector<float> v0 = Wave(kCount, 0.01f, 0.7f);
  for (float& v : v0) v = v * v;
  Tensor<1> param = Tensor<1>::FromData(param0, {kCount});
  Tensor<1> grad = Tensor<1>::FromData(grad0, {kCount});
  Tensor<1> exp_avg = Tensor<1>::FromData(m0, {kCount});
  Tensor<1> exp_avg_sq = Tensor<1>::FromData(v0, {kCount});
  AdamStep scalars;
  scalars.lr = 0.01;
  scalars.beta1 = 0.9;
  scalars.beta2 = 0.999;
  scalars.eps = 1e-8;
  scalars.weight_decay = 0.1;
  scalars.decoupled_weight_decay = true;
  scalars.step_size = 0.01 / (1 - std::pow(0.9, 3));
  scalars.bias_correction2_sqrt = std::sqrt(1 - std::pow(0.999, 3));
  const TensorBase state[] = {exp_avg.base(), exp_avg_sq.base()};
  ASSERT_TRUE(
      FusedUpdates<AdamStep>::Run(scalars, param.base(), grad.base(), state));

  const std::vector<float> p = param.to_data<float>();
  const std::vector<float> m = exp_avg.to_data<float>();
  const std::vector<float> v = exp_avg_sq.to_data<float>();
  for (int64_t i = 0; i < kCount; ++i) {
    const double g = grad0[i];
    const double want_m = 0.9 * m0[i] + 0.1 * g;
    const double want_v = 0.999 * v0[i] + 0.001 * g * g;
    const double decayed = param0[i] * (1 - 0.01 * 0.1);
    const double want_p =
        decayed -
        scalars.step_size * want_m /
            (std::sqrt(want_v) / scalars.bias_correction2_sqrt + 1e-8);
    // f32 rounding is relative to the terms, which may cancel.
    ASSERT_NEAR(want_m, m[i],
                1e-6 * (0.9 * std::fabs(m0[i]) + 0.1 * std::fabs(g)))
        << i;
    ASSERT_NEAR(want_v, v[i], 1e-6 * (v0[i] + 0.001 * g * g)) << i;
    const double update = std::fabs(want_p - decayed);
    ASSERT_NEAR(want_p, p[i], 1e-6 * std::fabs(decayed) + 1e-3 * update + 1e-9)
        << i;
  }
}

// Adam's kernel runs sixteen lanes wide where the CPU has AVX-512 and eight
// wide otherwise (cpu_update.h's ForEachChunkWide): both widths give the
// same bits, so a run's results do not depend on the vector width.
TEST(OptimizerKernelsTest, AdamKernelGivesTheSameBitsAtEitherWidth) {
  if (!kindling::cpu::HasAvx512()) {
    GTEST_SKIP() << "this CPU (or KINDLING_MAX_CPU_ISA) has no AVX-512 path "
                    "to compare with the eight-lane one";
  }
  const std::vector<float> param0 = Wave(kCount, 1.0f, 0.3f);
  const std::vector<float> grad0 = Wave(kCount, 0.5f, 1.1f);
  const std::vector<float> m0 = Wave(kCount, 0.1f, 2.0f);
  std::vector<float> v0 = Wave(kCount, 0.01f, 0.7f);
  for (float& v : v0) v = v * v;
  for (const bool decoupled : {false, true}) {
    for (const bool amsgrad : {false, true}) {
      AdamStep scalars;
      scalars.lr = 0.01;
      scalars.eps = 1e-8;
      scalars.weight_decay = 0.1;
      scalars.decoupled_weight_decay = decoupled;
      scalars.amsgrad = amsgrad;
      scalars.step_size = 0.01 / (1 - std::pow(0.9, 3));
      scalars.bias_correction2_sqrt = std::sqrt(1 - std::pow(0.999, 3));
      // Run() is one step at the width the CPU offers; the state it leaves,
      // parameter first.
      const auto run = [&] {
        std::vector<Tensor<1>> tensors;
        for (const std::vector<float>& values : {param0, grad0, m0, v0, v0}) {
          tensors.push_back(Tensor<1>::FromData(values, {kCount}));
        }
        const TensorBase state[] = {tensors[2].base(), tensors[3].base(),
                                    tensors[4].base()};
        EXPECT_TRUE(FusedUpdates<AdamStep>::Run(
            scalars, tensors[0].base(), tensors[1].base(),
            std::span<const TensorBase>(state, amsgrad ? 3 : 2)));
        std::vector<std::vector<float>> values;
        for (const int i : {0, 2, 3, 4}) {
          values.push_back(tensors[i].to_data<float>());
        }
        return values;
      };
      const std::vector<std::vector<float>> wide = run();
      std::vector<std::vector<float>> narrow;
      {
        const kindling::cpu::ScopedEightLanesForTesting eight_lanes;
        narrow = run();
      }
      for (size_t t = 0; t < wide.size(); ++t) {
        for (int64_t i = 0; i < kCount; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(narrow[t][i]),
                    std::bit_cast<uint32_t>(wide[t][i]))
              << "state " << t << " element " << i
              << (decoupled ? " AdamW" : " Adam")
              << (amsgrad ? " amsgrad" : "");
        }
      }
    }
  }
}

TEST(OptimizerKernelsTest, SgdKernelFirstStepSetsTheBuffer) {
  const std::vector<float> param0 = Wave(kCount, 1.0f, 0.3f);
  const std::vector<float> grad0 = Wave(kCount, 0.5f, 1.1f);
  Tensor<1> param = Tensor<1>::FromData(param0, {kCount});
  Tensor<1> grad = Tensor<1>::FromData(grad0, {kCount});
  Tensor<1> buffer = Tensor<1>::Full({kCount}, 123.0);  // must be ignored
  SgdStep scalars;
  scalars.lr = 0.1;
  scalars.momentum = 0.9;
  scalars.weight_decay = 0.01;
  scalars.nesterov = true;
  scalars.first_step = true;
  const TensorBase state[] = {buffer.base()};
  ASSERT_TRUE(
      FusedUpdates<SgdStep>::Run(scalars, param.base(), grad.base(), state));
  const std::vector<float> p = param.to_data<float>();
  const std::vector<float> b = buffer.to_data<float>();
  for (int64_t i = 0; i < kCount; ++i) {
    const double g = grad0[i] + 0.01 * param0[i];
    const double scale = std::fabs(grad0[i]) + 0.01 * std::fabs(param0[i]);
    ASSERT_NEAR(g, b[i], 1e-6 * scale) << i;
    const double want = param0[i] - 0.1 * (g + 0.9 * g);
    ASSERT_NEAR(want, p[i], 1e-6 * (std::fabs(param0[i]) + 0.2 * scale)) << i;
  }
}

TEST(OptimizerKernelsTest, AbsPowerSumOverManyBlocks) {
  const std::vector<float> values = Wave(kCount, 2.0f, 0.1f);
  const Tensor<1> tensor = Tensor<1>::FromData(values, {kCount});
  double squares = 0, absolute = 0, largest = 0, cubes = 0;
  for (float x : values) {
    squares += double{x} * x;
    absolute += std::fabs(x);
    largest = std::max(largest, std::fabs(double{x}));
    cubes += std::pow(std::fabs(double{x}), 3.0);
  }
  Backend& backend = GetBackend(Device::Cpu());
  // Squares of floats are exact in f64: only the adds round. (Squaring in
  // f32, as OpenBLAS's dsdot does on some CPUs, misses by ~1e-9.)
  EXPECT_NEAR(squares, backend.AbsPowerSum(tensor.base(), 2.0),
              1e-12 * squares);
  EXPECT_NEAR(absolute, backend.AbsPowerSum(tensor.base(), 1.0),
              1e-9 * absolute);
  EXPECT_EQ(largest,
            backend.AbsPowerSum(tensor.base(),
                                std::numeric_limits<double>::infinity()));
  EXPECT_NEAR(cubes, backend.AbsPowerSum(tensor.base(), 3.0), 1e-9 * cubes);
  // Fixed blocks summed in order: the same bits every time.
  EXPECT_EQ(backend.AbsPowerSum(tensor.base(), 2.0),
            backend.AbsPowerSum(tensor.base(), 2.0));
}

TEST(OptimizerKernelsTest, ScaleClampKeepsNaN) {
  Tensor<1> tensor = Tensor<1>::FromData(
      {1.0f, -3.0f, std::numeric_limits<float>::quiet_NaN(), 0.25f}, {4});
  GetBackend(Device::Cpu()).ScaleClamp(tensor.base(), 2.0, 1.0);
  const std::vector<float> out = tensor.to_data<float>();
  EXPECT_EQ(1.0f, out[0]);
  EXPECT_EQ(-1.0f, out[1]);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(0.5f, out[3]);
}

}  // namespace
