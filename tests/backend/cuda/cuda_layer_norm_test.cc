// CudaBackend against the CPU backend: LayerNorm and LayerNormBackward on every
// kernel path. (tests/backend/cuda/backend_test_support.h says how cases
// compare.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/layer_norm_ops.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

// --- Layer norm (LayerNorm, LayerNormBackward) ------------------------------

// LayerNormOutputs: everything the two kernels write for one case.
struct LayerNormOutputs {
  TensorBase out, mean, rstd, input_grad, gamma_grad, beta_grad;
};

// RunLayerNorm(): forward and backward (every gradient) of [rows, d] inputs
// from fixed seeds on `device`, computed in `dtype` (statistics in f32, or
// f64 for f64); gamma and beta undefined unless `affine`.
LayerNormOutputs RunLayerNorm(int64_t rows, int64_t d, DType dtype, bool affine,
                              const Device& device) {
  const DType statistics = dtype == DType::kF64 ? DType::kF64 : DType::kF32;
  const TensorBase x = Input({rows, d}, dtype, 81, device, 3, 7);
  const TensorBase dy = Input({rows, d}, dtype, 82, device);
  const TensorBase gamma =
      affine ? Input({d}, dtype, 83, device, 0.5, 1.5) : TensorBase();
  const TensorBase beta = affine ? Input({d}, dtype, 84, device) : TensorBase();
  LayerNormOutputs o;
  o.out = TensorBase::Empty({rows, d}, dtype, device);
  o.mean = TensorBase::Empty({rows}, statistics, device);
  o.rstd = TensorBase::Empty({rows}, statistics, device);
  o.input_grad = TensorBase::Empty({rows, d}, dtype, device);
  o.gamma_grad = TensorBase::Empty({d}, dtype, device);
  o.beta_grad = TensorBase::Empty({d}, dtype, device);
  Backend& backend = GetBackend(device);
  backend.LayerNorm(o.out, o.mean, o.rstd, x, gamma, beta, 1e-5);
  backend.LayerNormBackward(o.input_grad, o.gamma_grad, o.beta_grad, dy, x,
                            o.mean, o.rstd, gamma);
  return o;
}

// ParameterGradTolerance(): how far the GPU's f32 dgamma/dbeta may be from
// the CPU's, which sums the same terms in double (so it is the exactly
// rounded sum, up to 1 ulp). The GPU sums in f32: each of a chunk's 8 row
// lanes adds about n = rows_per_chunk / 8 terms one after another, and the
// k-th addition rounds a partial sum of size ~sigma * sqrt(k), so a lane's
// error has a standard deviation of about u * sigma * n / sqrt(2)
// (u = 2^-24); the 8 * chunks lanes' errors add at random, giving
// u * sigma * sqrt(rows * rows_per_chunk / 16). The chunking mirrors
// layer_norm.cu (at least 32 rows a chunk, at most 128 chunks), so for large
// R the error grows like R, not sqrt(R). Terms are dy * xhat with |dy| <= 2
// and |xhat| <= 1.8 for these inputs: sigma <= 4. Six standard deviations
// make a false failure over ~10^6 compared values unlikely. (A numpy replay
// of the kernel's order over these shapes gave at most 4.3e-4 at
// [70000, 1025], where this allows 2.2e-3 and the plain 1e-5 + 1e-4 * |x|
// failed 3 of 2050 values.)
Tolerance ParameterGradTolerance(int64_t rows, DType dtype, Tolerance tol) {
  if (dtype != DType::kF32) return tol;
  const int64_t min_rows = 32, max_chunks = 128;
  int64_t chunks = std::min((rows + min_rows - 1) / min_rows, max_chunks);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const double u = std::ldexp(1.0, -24);
  const double sigma = 4;
  const double sd =
      u * sigma * std::sqrt(static_cast<double>(rows) * rows_per_chunk / 16);
  return {tol.rtol, tol.atol + 6 * sd};
}

void ExpectLayerNormClose(const LayerNormOutputs& cpu,
                          const LayerNormOutputs& gpu, Tolerance tol,
                          const std::string& what) {
  ExpectClose(cpu.out, gpu.out, tol, what + " out");
  ExpectClose(cpu.mean, gpu.mean, tol, what + " mean");
  ExpectClose(cpu.rstd, gpu.rstd, tol, what + " rstd");
  ExpectClose(cpu.input_grad, gpu.input_grad, tol, what + " input_grad");
  const Tolerance sums =
      ParameterGradTolerance(cpu.out.shape()[0], cpu.out.dtype(), tol);
  ExpectClose(cpu.gamma_grad, gpu.gamma_grad, sums, what + " gamma_grad");
  ExpectClose(cpu.beta_grad, gpu.beta_grad, sums, what + " beta_grad");
}

// Rows of every kernel path: a warp per row with 1 to 32 elements a lane
// (D = 1 .. 1024), a block per row with the row cached in shared memory
// (1025, 4096; f32 rows of a multiple of 4 read as float4: 4096, 2052) and
// without (12000 f32 / 6000 f64 elements exceed the
// cache), more rows than 32 * 128 (the parameter chunks' cap), and more
// rows than one grid covers on each path (the grid-stride loops, reusing
// the shared cache and scratch across rows).
TEST_F(CudaBackendTest, LayerNormMatchesTheCpuOnEveryPath) {
  struct Case {
    int64_t rows;
    int64_t d;
  };
  const Case cases[] = {{5, 1},      {9, 7},        {3, 33},    {40, 100},
                        {17, 1000},  {6, 1024},     {7, 1025},  {33, 4096},
                        {9, 2052},   {3, 12000},    {4, 6000},  {5000, 7},
                        {4100, 300}, {70000, 1025}, {270000, 8}};
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const Tolerance tol =
        dtype == DType::kF64 ? Tolerance{1e-10, 1e-12} : Tolerance{1e-4, 1e-5};
    for (const Case& c : cases) {
      for (bool affine : {true, false}) {
        const LayerNormOutputs cpu =
            RunLayerNorm(c.rows, c.d, dtype, affine, kCpu);
        const LayerNormOutputs gpu =
            RunLayerNorm(c.rows, c.d, dtype, affine, kGpu);
        ExpectLayerNormClose(
            cpu, gpu, tol,
            "layer_norm " + Name(dtype) + " [" + std::to_string(c.rows) + ", " +
                std::to_string(c.d) + "]" + (affine ? " affine" : ""));
      }
    }
  }
}

// The 16-bit floats are stored in half precision and computed in f32: the
// CPU's f32 run on the same (rounded) inputs, within the storage's rounding.
TEST_F(CudaBackendTest, HalfLayerNormComputesInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t d :
         {int64_t{100}, int64_t{1024}, int64_t{3000}, int64_t{12000}}) {
      const LayerNormOutputs gpu = RunLayerNorm(64, d, dtype, true, kGpu);
      // Input() rounds through f64 -> dtype; the CPU side reads the same
      // rounded values widened to f32.
      const auto widen = [&](uint32_t seed, const Shape& shape, double low,
                             double high) {
        return Input(shape, dtype, seed, kCpu, low, high).To(DType::kF32);
      };
      const TensorBase x = widen(81, {64, d}, 3, 7);
      const TensorBase dy = widen(82, {64, d}, -2, 2);
      const TensorBase gamma = widen(83, {d}, 0.5, 1.5);
      const TensorBase beta = widen(84, {d}, -2, 2);
      LayerNormOutputs cpu;
      cpu.out = TensorBase::Empty({64, d}, DType::kF32, kCpu);
      cpu.mean = TensorBase::Empty({64}, DType::kF32, kCpu);
      cpu.rstd = TensorBase::Empty({64}, DType::kF32, kCpu);
      cpu.input_grad = TensorBase::Empty({64, d}, DType::kF32, kCpu);
      cpu.gamma_grad = TensorBase::Empty({d}, DType::kF32, kCpu);
      cpu.beta_grad = TensorBase::Empty({d}, DType::kF32, kCpu);
      Backend& backend = GetBackend(kCpu);
      backend.LayerNorm(cpu.out, cpu.mean, cpu.rstd, x, gamma, beta, 1e-5);
      backend.LayerNormBackward(cpu.input_grad, cpu.gamma_grad, cpu.beta_grad,
                                dy, x, cpu.mean, cpu.rstd, gamma);
      const std::string what =
          "layer_norm " + Name(dtype) + " d " + std::to_string(d);
      ExpectClose(cpu.mean, gpu.mean, {1e-5, 1e-6}, what + " mean");
      ExpectClose(cpu.rstd, gpu.rstd, {1e-5, 1e-6}, what + " rstd");
      const Tolerance tol = ToleranceOf(dtype);
      for (const auto& [want, got, name] :
           {std::tuple{cpu.out, gpu.out, "out"},
            std::tuple{cpu.input_grad, gpu.input_grad, "input_grad"},
            std::tuple{cpu.gamma_grad, gpu.gamma_grad, "gamma_grad"},
            std::tuple{cpu.beta_grad, gpu.beta_grad, "beta_grad"}}) {
        ExpectClose(want.To(dtype), got, tol, what + " " + name);
      }
    }
  }
}

// The front end keeps f16/bf16 16-bit on the GPU (ComputesHalfNatively),
// with f32 statistics, and matches the CPU's f32 computation of the same
// rounded values, forward and every gradient.
TEST_F(CudaBackendTest, HalfLayerNormThroughTheFrontEnd) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t d : {int64_t{256}, int64_t{3000}}) {
      const auto run = [&](const Device& device, DType compute) {
        const TensorBase x = Input({2, 16, d}, dtype, 91, kCpu, 3, 7)
                                 .To(compute)
                                 .ToDevice(device);
        const TensorBase dy =
            Input({2, 16, d}, dtype, 92, kCpu).To(compute).ToDevice(device);
        const TensorBase gamma =
            Input({d}, dtype, 93, kCpu, 0.5, 1.5).To(compute).ToDevice(device);
        const TensorBase beta =
            Input({d}, dtype, 94, kCpu).To(compute).ToDevice(device);
        const ops::LayerNormResult forward =
            ops::LayerNorm(x, gamma, beta, 1e-5);
        const ops::LayerNormGradients grads = ops::LayerNormBackward(
            dy, x, forward.mean, forward.rstd, gamma, {true, true, true});
        return std::vector<TensorBase>{forward.output, forward.mean,
                                       grads.input, grads.gamma, grads.beta};
      };
      const std::vector<TensorBase> gpu = run(kGpu, dtype);
      const std::vector<TensorBase> cpu = run(kCpu, DType::kF32);
      const std::string what = "front-end layer_norm " + Name(dtype);
      EXPECT_EQ(dtype, gpu[0].dtype()) << what;
      EXPECT_EQ(DType::kF32, gpu[1].dtype()) << what;  // statistics
      ExpectClose(cpu[1], gpu[1], {1e-5, 1e-6}, what + " mean");
      const char* names[] = {"out", "mean", "input_grad", "gamma_grad",
                             "beta_grad"};
      for (int k : {0, 2, 3, 4}) {
        ExpectClose(cpu[k].To(dtype), gpu[k], ToleranceOf(dtype),
                    what + " " + names[k]);
      }
    }
  }
}

// Only some gradients: the others stay untouched and nothing faults.
TEST_F(CudaBackendTest, LayerNormBackwardWritesOnlyTheGradientsAsked) {
  auto [cpu, gpu] = Both([&](const Device& device) {
    const LayerNormOutputs o = RunLayerNorm(50, 70, DType::kF32, true, device);
    const TensorBase x = Input({50, 70}, DType::kF32, 81, device, 3, 7);
    const TensorBase dy = Input({50, 70}, DType::kF32, 82, device);
    const TensorBase beta_grad = TensorBase::Empty({70}, DType::kF32, device);
    GetBackend(device).LayerNormBackward(TensorBase(), TensorBase(), beta_grad,
                                         dy, x, o.mean, o.rstd, TensorBase());
    return beta_grad;
  });
  ExpectClose(cpu, gpu, {1e-4, 1e-5}, "layer_norm beta_grad alone");
}

}  // namespace
}  // namespace kindling::cuda_test
