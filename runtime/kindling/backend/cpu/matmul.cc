// Matrix multiply on the CPU: OpenBLAS sgemm/dgemm for f32/f64, a plain
// i-k-j loop for integers.
//
// Shapes: out [B.., M, N] = lhs [B.., M, K] x rhs [B.., K, N]; the batch dims
// B.. are already broadcast by the front end (zero strides allowed). Each
// matrix operand is passed to BLAS without copying when its strides are
// row-major (unit column stride) or column-major (unit row stride, passed as
// transposed); only other layouts are packed first. A batched lhs that is
// contiguous times a broadcast rhs (the Linear-layer case) is one GEMM with
// M' = B * M. Threads: see gemm.h.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// How one matrix operand is handed to BLAS.
struct BlasMatrix {
  CBLAS_TRANSPOSE transpose = CblasNoTrans;
  int64_t leading = 1;
  bool usable = false;
};

// Describes a rows x cols matrix with element strides (row_stride,
// col_stride) in row-major BLAS terms.
BlasMatrix DescribeMatrix(int64_t rows, int64_t cols, int64_t row_stride,
                          int64_t col_stride) {
  BlasMatrix matrix;
  if ((cols == 1 || col_stride == 1) &&
      (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) {
    matrix.transpose = CblasNoTrans;
    matrix.leading = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    matrix.usable = true;
  } else if ((rows == 1 || row_stride == 1) &&
             (cols == 1 || col_stride >= std::max<int64_t>(rows, 1))) {
    matrix.transpose = CblasTrans;
    matrix.leading = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    matrix.usable = true;
  }
  return matrix;
}

template <class T>
void MatmulTyped(const TensorBase& out, const TensorBase& lhs_in,
                 const TensorBase& rhs_in) {
  const int rank = out.rank();
  const int64_t m = out.shape()[rank - 2];
  const int64_t n = out.shape()[rank - 1];
  const int64_t k = lhs_in.shape()[rank - 1];
  TensorBase lhs = lhs_in;
  TensorBase rhs = rhs_in;
  BlasMatrix a =
      DescribeMatrix(m, k, lhs.strides()[rank - 2], lhs.strides()[rank - 1]);
  BlasMatrix b =
      DescribeMatrix(k, n, rhs.strides()[rank - 2], rhs.strides()[rank - 1]);
  if (!a.usable) {
    lhs = lhs.Contiguous();
    a = DescribeMatrix(m, k, k, 1);
  }
  if (!b.usable) {
    rhs = rhs.Contiguous();
    b = DescribeMatrix(k, n, n, 1);
  }
  const T* a_data = lhs.data_as<const T>();
  const T* b_data = rhs.data_as<const T>();
  T* c_data = out.data_as<T>();
  const int batch_rank = rank - 2;
  int64_t batch = 1;
  for (int i = 0; i < batch_rank; ++i) batch *= out.shape()[i];

  // Fold the batch into M when lhs is one contiguous [B*M, K] block and rhs
  // is the same matrix for every batch entry.
  bool rhs_shared = true;
  for (int i = 0; i < batch_rank; ++i) {
    rhs_shared &= rhs.strides()[i] == 0 || out.shape()[i] == 1;
  }
  if (batch > 1 && rhs_shared && lhs.is_contiguous()) {
    ParallelGemm<T>(CblasNoTrans, b.transpose, batch * m, n, k, a_data, k,
                    b_data, b.leading, c_data, n);
    return;
  }
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t entry = 0; entry < batch; ++entry) {
    int64_t a_offset = 0, b_offset = 0;
    for (int i = 0; i < batch_rank; ++i) {
      a_offset += index[i] * lhs.strides()[i];
      b_offset += index[i] * rhs.strides()[i];
    }
    ParallelGemm<T>(a.transpose, b.transpose, m, n, k, a_data + a_offset,
                    a.leading, b_data + b_offset, b.leading,
                    c_data + entry * m * n, n);
    for (int i = batch_rank - 1; i >= 0; --i) {
      if (++index[i] < out.shape()[i]) break;
      index[i] = 0;
    }
  }
}

}  // namespace

void MatmulKernel(const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs) {
  UseSingleThreadedBlas();
  DispatchDType<kArithmeticDTypes>(lhs.dtype(), "cpu matmul", [&]<class T>() {
    MatmulTyped<T>(out, lhs, rhs);
  });
}

}  // namespace kindling::cpu
