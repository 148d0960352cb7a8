// CudaBackend against the CPU backend: Philox fills and dropout masks, bit for
// bit. (tests/backend/cuda/backend_test_support.h says how cases compare.)
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

TEST_F(CudaBackendTest, PhiloxFillsAreBitIdenticalToTheCpu) {
  const DType dtypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
  const RandomDistribution distributions[] = {RandomDistribution::kUniform,
                                              RandomDistribution::kNormal,
                                              RandomDistribution::kBernoulli};
  for (DType dtype : dtypes) {
    for (RandomDistribution distribution : distributions) {
      for (int64_t count : {1, 7, 4099, 300001}) {
        auto [cpu, gpu] = Both([&](const Device& device) {
          const TensorBase out = TensorBase::Empty({count}, dtype, device);
          const double a =
              distribution == RandomDistribution::kBernoulli ? 0.3 : -1.5;
          const double b =
              distribution == RandomDistribution::kBernoulli ? 1 / 0.7 : 2.5;
          GetBackend(device).FillRandom(out, distribution, 0x123456789abcdefull,
                                        0xfffffffffffffff0ull, a, b);
          return out;
        });
        const std::string what =
            "fill_random " + Name(dtype) + " dist " +
            std::to_string(static_cast<int>(distribution)) + " n " +
            std::to_string(count);
        if (dtype == DType::kF64 &&
            distribution == RandomDistribution::kNormal) {
          // libm and CUDA may round log/sin/cos differently in the last bit.
          ExpectClose(cpu, gpu, {1e-14, 1e-15}, what);
        } else {
          ExpectBitEqual(cpu, gpu, what);
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, DropoutIsBitIdenticalOnStridedInputs) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input({301, 17}, dtype, 27, device).Transpose(0, 1);
      const TensorBase out = TensorBase::Empty(in.shape(), dtype, device);
      GetBackend(device).Dropout(out, in, 0.25, 42, 1000);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "dropout " + Name(dtype));
  }
}

}  // namespace
}  // namespace kindling::cuda_test
