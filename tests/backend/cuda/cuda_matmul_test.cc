// CudaBackend against the CPU backend: Matmul over every layout and dtype
// (cuBLAS and the integer kernel). (tests/backend/cuda/backend_test_support.h
// says how cases compare.)
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

struct MatmulCase {
  std::string name;
  std::function<TensorBase(const Device&)> lhs;
  std::function<TensorBase(const Device&)> rhs;
};

TEST_F(CudaBackendTest, MatmulMatchesForEveryLayout) {
  const DType f32 = DType::kF32;
  const std::vector<MatmulCase> cases = {
      {"plain",
       [&](const Device& d) {
         return Input({33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d);
       }},
      {"transposed lhs",
       [&](const Device& d) {
         return Input({47, 33}, f32, 1, d).Transpose(0, 1);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d);
       }},
      {"transposed rhs",
       [&](const Device& d) {
         return Input({33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({29, 47}, f32, 2, d).Transpose(0, 1);
       }},
      {"sliced (not GEMM-compatible)",
       [&](const Device& d) {
         return Input({33, 94}, f32, 1, d).Slice(1, 0, 94, 2);
       },
       [&](const Device& d) {
         return Input({47, 58}, f32, 2, d).Slice(1, 1, 58, 2);
       }},
      {"linear layer (shared rhs)",
       [&](const Device& d) {
         return Input({4, 33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 29}, f32, 2, d).Unsqueeze(0).Expand({4, 47, 29});
       }},
      {"batched",
       [&](const Device& d) {
         return Input({3, 2, 33, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({3, 2, 29, 47}, f32, 2, d).Transpose(2, 3);
       }},
      {"batch broadcast that does not collapse",
       [&](const Device& d) {
         return Input({3, 1, 33, 47}, f32, 1, d).Expand({3, 2, 33, 47});
       },
       [&](const Device& d) {
         return Input({3, 2, 47, 29}, f32, 2, d);
       }},
      {"vector",
       [&](const Device& d) {
         return Input({1, 47}, f32, 1, d);
       },
       [&](const Device& d) {
         return Input({47, 1}, f32, 2, d);
       }},
  };
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32}) {
    for (const MatmulCase& c : cases) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase lhs = c.lhs(device).To(dtype);
        const TensorBase rhs = c.rhs(device).To(dtype);
        Shape out_shape = lhs.shape();
        out_shape[out_shape.rank() - 1] = rhs.shape()[rhs.rank() - 1];
        const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
        GetBackend(device).Matmul(out, lhs, rhs);
        return out;
      });
      ExpectClose(cpu, gpu, {dtype == DType::kF32 ? 1e-4 : 1e-11, 1e-5},
                  "matmul " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, HalfMatmulAccumulatesInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const TensorBase lhs = Input({64, 256}, dtype, 20, kCpu, -1, 1);
    const TensorBase rhs = Input({256, 48}, dtype, 21, kCpu, -1, 1);
    const TensorBase expected = TensorBase::Empty({64, 48}, DType::kF32, kCpu);
    GetBackend(kCpu).Matmul(expected, lhs.To(DType::kF32), rhs.To(DType::kF32));
    const TensorBase out = TensorBase::Empty({64, 48}, dtype, kGpu);
    GetBackend(kGpu).Matmul(out, lhs.ToDevice(kGpu), rhs.ToDevice(kGpu));
    ExpectClose(expected.To(dtype), out, {2 * ToleranceOf(dtype).rtol, 0.05},
                "half matmul " + Name(dtype));
  }
}

TEST_F(CudaBackendTest, MatmulWithEmptyInnerDimWritesZeros) {
  const TensorBase lhs = TensorBase::Empty({3, 0}, DType::kF32, kGpu);
  const TensorBase rhs = TensorBase::Empty({0, 4}, DType::kF32, kGpu);
  const TensorBase out = TensorBase::Empty({3, 4}, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(out, 7);
  GetBackend(kGpu).Matmul(out, lhs, rhs);
  EXPECT_EQ(std::vector<double>(12, 0.0), Doubles(out));
}

}  // namespace
}  // namespace kindling::cuda_test
