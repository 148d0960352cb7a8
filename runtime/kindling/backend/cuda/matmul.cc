// Matrix multiply on CUDA through cuBLAS (f32, f64, f16, bf16; integers go
// to IntegerMatmulKernel).
//
// out [B.., M, N] = lhs [B.., M, K] x rhs [B.., K, N]. Operands are passed
// to cublasGemmStridedBatchedEx without copying when gemm_layout.h can
// describe them (row-major or transposed matrices, batch dims that collapse
// to one stride, including stride 0 for a broadcast operand); a matrix whose
// strides fit neither layout is made contiguous first, and batch dims that
// do not collapse are looped over, one GEMM per batch entry. A contiguous
// batched lhs times a shared rhs (the Linear-layer case) is one GEMM with
// M' = B * M. f16/bf16 accumulate in f32. TF32 is used for f32 only when
// SetCudaMatmulAllowTf32(true) was called.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <vector>

#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/gemm_layout.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/core/check.h"

namespace kindling::cuda {
namespace {

std::atomic<bool> allow_tf32{false};

// GemmTypes: the cuBLAS data and compute types of one dtype.
struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool double_scalars;  // alpha/beta are double (f64) rather than float
};

GemmTypes TypesOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {
          CUDA_R_32F,
          allow_tf32.load() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
          false};
    case DType::kF64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, true};
    case DType::kF16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
    case DType::kBF16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
    default:
      break;
  }
  KINDLING_CHECK(false, "cuda matmul: dtype %s has no cuBLAS path",
                 std::string(DTypeName(dtype)));
  return {CUDA_R_32F, CUBLAS_COMPUTE_32F, false};
}

// AsInt() is `value` as a cuBLAS int argument; aborts naming it otherwise.
int AsInt(int64_t value, const char* what) {
  KINDLING_CHECK(value >= 0 && value <= INT_MAX,
                 "cuda matmul: %s = %d does not fit cuBLAS's int", what, value);
  return static_cast<int>(value);
}

// One cuBLAS call: `batch` row-major products C_b [m, n] = A_b [m, k] B_b
// [k, n], C contiguous.
struct GemmCall {
  int64_t m, n, k, batch;
  const void* a;
  GemmOperand a_layout;
  int64_t a_batch_stride;
  const void* b;
  GemmOperand b_layout;
  int64_t b_batch_stride;
  void* c;
};

void RunGemm(cublasHandle_t handle, const GemmTypes& types,
             const GemmCall& call) {
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const void* alpha = types.double_scalars ? static_cast<const void*>(&alpha_d)
                                           : static_cast<const void*>(&alpha_f);
  const void* beta = types.double_scalars ? static_cast<const void*>(&beta_d)
                                          : static_cast<const void*>(&beta_f);
  // Column-major C^T [n, m] = B^T [n, k] x A^T [k, m].
  KINDLING_CUBLAS_LAUNCH(
      cublasGemmStridedBatchedEx,
      (handle, call.b_layout.transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
       call.a_layout.transpose ? CUBLAS_OP_T : CUBLAS_OP_N, AsInt(call.n, "N"),
       AsInt(call.m, "M"), AsInt(call.k, "K"), alpha, call.b, types.data,
       AsInt(call.b_layout.leading, "rhs leading dim"), call.b_batch_stride,
       call.a, types.data, AsInt(call.a_layout.leading, "lhs leading dim"),
       call.a_batch_stride, beta, call.c, types.data, AsInt(call.n, "ldc"),
       call.m * call.n, AsInt(call.batch, "batch"), types.compute,
       CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void SetCudaMatmulAllowTf32(bool allow) { allow_tf32.store(allow); }
bool CudaMatmulAllowsTf32() { return allow_tf32.load(); }

void MatmulKernel(int device_index, cudaStream_t stream, const TensorBase& out,
                  const TensorBase& lhs_in, const TensorBase& rhs_in) {
  const DType dtype = lhs_in.dtype();
  if (dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kU8) {
    IntegerMatmulKernel(stream, out, lhs_in, rhs_in);
    return;
  }
  const GemmTypes types = TypesOf(dtype);
  const int rank = out.rank();
  const int batch_rank = rank - 2;
  const int64_t m = out.shape()[rank - 2];
  const int64_t n = out.shape()[rank - 1];
  const int64_t k = lhs_in.shape()[rank - 1];
  int64_t batch = 1;
  for (int i = 0; i < batch_rank; ++i) batch *= out.shape()[i];
  if (out.numel() == 0) return;
  if (k == 0) {  // an empty sum: zeros
    KINDLING_CUDA_CHECK(cudaMemsetAsync(
        out.data(), 0, out.numel() * out.element_size(), stream));
    return;
  }
  TensorBase lhs = lhs_in;
  TensorBase rhs = rhs_in;
  GemmOperand a = DescribeGemmOperand(m, k, lhs.strides()[rank - 2],
                                      lhs.strides()[rank - 1]);
  GemmOperand b = DescribeGemmOperand(k, n, rhs.strides()[rank - 2],
                                      rhs.strides()[rank - 1]);
  if (!a.usable) {
    lhs = lhs.Contiguous();
    a = DescribeGemmOperand(m, k, k, 1);
  }
  if (!b.usable) {
    rhs = rhs.Contiguous();
    b = DescribeGemmOperand(k, n, n, 1);
  }
  cublasHandle_t handle = CublasHandle(device_index);
  KINDLING_CUBLAS_CHECK(cublasSetStream(handle, stream));
  const size_t element = out.element_size();
  const char* a_data = static_cast<const char*>(lhs.data());
  const char* b_data = static_cast<const char*>(rhs.data());
  char* c_data = static_cast<char*>(out.data());

  // The Linear-layer case: one [B*M, K] x [K, N] product.
  bool rhs_shared = true;
  for (int i = 0; i < batch_rank; ++i) {
    rhs_shared &= rhs.strides()[i] == 0 || out.shape()[i] == 1;
  }
  if (batch > 1 && rhs_shared && lhs.is_contiguous() && batch * m <= INT_MAX) {
    RunGemm(handle, types,
            GemmCall{batch * m, n, k, 1, a_data,
                     DescribeGemmOperand(batch * m, k, k, 1), 0, b_data, b, 0,
                     c_data});
    return;
  }

  std::vector<int64_t> batch_shape(out.shape().begin(),
                                   out.shape().begin() + batch_rank);
  std::vector<int64_t> lhs_strides(lhs.strides().begin(),
                                   lhs.strides().begin() + batch_rank);
  std::vector<int64_t> rhs_strides(rhs.strides().begin(),
                                   rhs.strides().begin() + batch_rank);
  const BatchStride a_batch =
      CollapseBatch(batch_rank, batch_shape.data(), lhs_strides.data());
  const BatchStride b_batch =
      CollapseBatch(batch_rank, batch_shape.data(), rhs_strides.data());
  if (a_batch.collapses && b_batch.collapses && batch <= INT_MAX) {
    RunGemm(handle, types,
            GemmCall{m, n, k, batch, a_data, a, a_batch.stride, b_data, b,
                     b_batch.stride, c_data});
    return;
  }
  // Batch dims that do not collapse: one GEMM per batch entry.
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t entry = 0; entry < batch; ++entry) {
    int64_t a_offset = 0, b_offset = 0;
    for (int i = 0; i < batch_rank; ++i) {
      a_offset += index[i] * lhs_strides[i];
      b_offset += index[i] * rhs_strides[i];
    }
    RunGemm(handle, types,
            GemmCall{m, n, k, 1, a_data + a_offset * element, a, 0,
                     b_data + b_offset * element, b, 0,
                     c_data + entry * m * n * element});
    for (int i = batch_rank - 1; i >= 0; --i) {
      if (++index[i] < batch_shape[i]) break;
      index[i] = 0;
    }
  }
}

}  // namespace kindling::cuda
