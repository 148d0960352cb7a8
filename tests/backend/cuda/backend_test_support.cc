#include "tests/backend/cuda/backend_test_support.h"

#include <cmath>
#include <random>

#include "tests/backend/cuda/gpu_test_support.h"

namespace kindling::cuda_test {

void CudaBackendTest::SetUp() { KINDLING_NEED_CUDA_DEVICES(1); }

// Input(): a tensor of `shape` with values from `seed` (uniform in [low,
// high), rounded to integers for integer dtypes), on `device`.
TensorBase Input(const Shape& shape, DType dtype, uint32_t seed,
                 const Device& device, double low, double high) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values(shape.num_elements());
  const bool integer =
      dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kU8;
  for (double& value : values) {
    value = integer ? std::floor(uniform(rng)) : uniform(rng);
  }
  if (dtype == DType::kBool) {
    for (double& value : values) value = value > 0 ? 1 : 0;
  }
  const TensorBase f64 =
      TensorBase::FromHost(values.data(), shape, DType::kF64, kCpu);
  return f64.To(dtype).ToDevice(device);
}

// Bytes() is the row-major bytes of `tensor`, read back to the host.
std::vector<uint8_t> Bytes(const TensorBase& tensor) {
  std::vector<uint8_t> bytes(tensor.numel() * tensor.element_size());
  tensor.ToDevice(kCpu).CopyToHost(bytes.data());
  return bytes;
}

// Doubles() is `tensor`'s values as f64 on the host (converted on the CPU).
std::vector<double> Doubles(const TensorBase& tensor) {
  std::vector<double> values(tensor.numel());
  tensor.ToDevice(kCpu).To(DType::kF64).CopyToHost(values.data());
  return values;
}

Tolerance ToleranceOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {2e-5, 1e-6};
    case DType::kF64:
      return {1e-12, 1e-14};
    case DType::kF16:
      return {2e-3, 1e-3};
    case DType::kBF16:
      return {1.6e-2, 1e-2};
    default:
      return {0, 0};
  }
}

// SumTolerance(): how far two f64 sums of the same `n` terms per line,
// added in different orders (the CPU's lanes and blocks, the GPU's chunks),
// may be apart. A sum's rounding error follows its partial sums, not its
// result: the terms of `values` are random with root mean square `rms`, so
// the k-th addition rounds a partial sum of size ~rms * sqrt(k) by a random
// amount of standard deviation ~u * rms * sqrt(k / 12), and the n errors add
// up to a standard deviation of about u * rms * n / sqrt(24) for a
// one-after-another sum (blocked and pairwise orders do better). Six of
// them, taken for each side, bound the difference. (A line of 700001 terms
// in [-100, 100] sums to ~100 next to partial sums of ~5e4, so a tolerance
// relative to the result, 1e-12 * 100, failed on an H100 at 1.4e-10.)
Tolerance SumTolerance(const std::vector<double>& values, int64_t n) {
  double squares = 0;
  for (double v : values) squares += v * v;
  const double rms = std::sqrt(squares / static_cast<double>(values.size()));
  const double u = std::ldexp(1.0, -53);
  const double sd = u * rms * static_cast<double>(n) / std::sqrt(24.0);
  return {0, 2 * 6 * sd};
}

void ExpectClose(const TensorBase& cpu, const TensorBase& gpu, Tolerance tol,
                 const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  ASSERT_EQ(kGpu, gpu.device()) << what;
  const std::vector<double> a = Doubles(cpu);
  const std::vector<double> b = Doubles(gpu);
  int failures = 0;
  for (size_t i = 0; i < a.size() && failures < 5; ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;
    const double limit = tol.atol + tol.rtol * std::fabs(a[i]);
    if (!(std::fabs(a[i] - b[i]) <= limit)) {
      ADD_FAILURE() << what << ": element " << i << " cpu " << a[i] << " cuda "
                    << b[i];
      ++failures;
    }
  }
}

void ExpectBitEqual(const TensorBase& cpu, const TensorBase& gpu,
                    const std::string& what) {
  ASSERT_EQ(cpu.shape(), gpu.shape()) << what;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << what;
  const std::vector<uint8_t> a = Bytes(cpu);
  const std::vector<uint8_t> b = Bytes(gpu);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      ADD_FAILURE() << what << ": byte " << i << " of element "
                    << i / cpu.element_size() << " differs";
      return;
    }
  }
}

// Both() runs `compute` on each device and returns (cpu, gpu) results.
using Compute = std::function<TensorBase(const Device&)>;
std::pair<TensorBase, TensorBase> Both(const Compute& compute) {
  return {compute(kCpu), compute(kGpu)};
}

std::string Name(DType dtype) { return std::string(DTypeName(dtype)); }

}  // namespace kindling::cuda_test
