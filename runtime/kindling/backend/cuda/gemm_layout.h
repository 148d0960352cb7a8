// How the CUDA matmul hands strided operands to cuBLAS without copying.
//
// cuBLAS is column-major; a row-major product C = A B is computed as
// C^T = B^T A^T, so a row-major matrix (unit column stride) is passed as-is
// with op N and a transposed view (unit row stride) with op T, its leading
// dimension the other stride. Batch dims become one batch stride when they
// collapse (contiguous batches, or all broadcast with stride 0); only other
// layouts are copied or looped over. Pure host functions, unit-tested in the
// default build (tests/backend/cuda/gemm_layout_test.cc).
#ifndef KINDLING_BACKEND_CUDA_GEMM_LAYOUT_H_
#define KINDLING_BACKEND_CUDA_GEMM_LAYOUT_H_

#include <algorithm>
#include <cstdint>

namespace kindling::cuda {

// GemmOperand: one rows x cols matrix as cuBLAS sees it.
struct GemmOperand {
  bool usable = false;     // false: strides fit neither layout; copy it
  bool transpose = false;  // true: stored column-major (pass op T)
  int64_t leading = 1;     // the leading dimension
};

// DescribeGemmOperand() classifies a rows x cols matrix with element
// strides (row_stride, col_stride). Size-1 dims accept any stride.
inline GemmOperand DescribeGemmOperand(int64_t rows, int64_t cols,
                                       int64_t row_stride, int64_t col_stride) {
  GemmOperand operand;
  const int64_t min_cols = std::max<int64_t>(cols, 1);
  const int64_t min_rows = std::max<int64_t>(rows, 1);
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= min_cols)) {
    operand.usable = true;
    operand.transpose = false;
    operand.leading = rows == 1 ? min_cols : row_stride;
  } else if ((rows == 1 || row_stride == 1) &&
             (cols == 1 || col_stride >= min_rows)) {
    operand.usable = true;
    operand.transpose = true;
    operand.leading = cols == 1 ? min_rows : col_stride;
  }
  return operand;
}

// BatchStride: whether batch dims collapse to one stride, and which.
struct BatchStride {
  bool collapses = false;
  int64_t stride = 0;
};

// CollapseBatch() finds s with offset(batch entry b) == b * s for the
// row-major flattening b of dims[0..batch_rank) (sizes `shape`, element
// strides `strides`), if there is one.
inline BatchStride CollapseBatch(int batch_rank, const int64_t* shape,
                                 const int64_t* strides) {
  BatchStride result;
  int innermost = -1;
  for (int i = batch_rank - 1; i >= 0; --i) {
    if (shape[i] != 1) {
      innermost = i;
      break;
    }
  }
  result.collapses = true;
  if (innermost < 0) return result;  // one batch entry
  result.stride = strides[innermost];
  int64_t entries_below = 1;  // entries of the dims after i
  for (int i = batch_rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != result.stride * entries_below) {
      result.collapses = false;
      return result;
    }
    entries_below *= shape[i];
  }
  return result;
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_GEMM_LAYOUT_H_
