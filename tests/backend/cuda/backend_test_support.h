// What every CudaBackend kernel test shares: the fixture, seeded inputs, and
// the comparisons against the CPU backend.
//
// Each case builds its inputs from fixed seeds on the host, runs the same
// Backend call on cpu and on cuda:0, and compares the results: bit for bit
// where the contract is exact (copies and conversions, fills, index moves,
// Philox fills and dropout masks, integer arithmetic), within a per-dtype
// tolerance elsewhere. The cases live in one file per kernel family
// (cuda_<family>_test.cc), all linked into //tests/backend/cuda:
// cuda_backend_test. Without a GPU every case skips, saying so.
#ifndef KINDLING_TESTS_BACKEND_CUDA_BACKEND_TEST_SUPPORT_H_
#define KINDLING_TESTS_BACKEND_CUDA_BACKEND_TEST_SUPPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda_test {

inline const Device kCpu = Device::Cpu();
inline const Device kGpu = Device::Cuda(0);

// CudaBackendTest: skips (or fails under KINDLING_REQUIRE_GPU) without a GPU.
class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override;
};

// Input(): a tensor of `shape` with values from `seed` (uniform in [low,
// high), rounded to integers for integer dtypes), on `device`.
TensorBase Input(const Shape& shape, DType dtype, uint32_t seed,
                 const Device& device, double low = -2, double high = 2);

// Bytes() is the row-major bytes of `tensor`, read back to the host.
std::vector<uint8_t> Bytes(const TensorBase& tensor);

// Doubles() is `tensor`'s values as f64 on the host (converted on the CPU).
std::vector<double> Doubles(const TensorBase& tensor);

struct Tolerance {
  double rtol;
  double atol;
};

// ToleranceOf(): the per-dtype tolerance of one rounding-different result.
Tolerance ToleranceOf(DType dtype);

// SumTolerance(): how far two f64 sums of the same `n` terms per line, added
// in different orders (the CPU's lanes and blocks, the GPU's chunks), may be
// apart, from the terms `values` (see the definition for the derivation).
Tolerance SumTolerance(const std::vector<double>& values, int64_t n);

// ExpectClose(): `gpu` (on cuda:0) equals `cpu` within `tol`, NaN where NaN;
// reports up to five differing elements.
void ExpectClose(const TensorBase& cpu, const TensorBase& gpu, Tolerance tol,
                 const std::string& what);

// ExpectBitEqual(): `cpu` and `gpu` hold the same bytes.
void ExpectBitEqual(const TensorBase& cpu, const TensorBase& gpu,
                    const std::string& what);

// Both() runs `compute` on each device and returns (cpu, gpu) results.
using Compute = std::function<TensorBase(const Device&)>;
std::pair<TensorBase, TensorBase> Both(const Compute& compute);

std::string Name(DType dtype);

}  // namespace kindling::cuda_test

#endif  // KINDLING_TESTS_BACKEND_CUDA_BACKEND_TEST_SUPPORT_H_
