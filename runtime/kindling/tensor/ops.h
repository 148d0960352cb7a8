// Tensor ops on TensorBase: the run-time-rank front end.
//
// Each function checks its operands (same device, compatible dtypes and
// shapes, axes in range), aborting with a message that names the op and the
// shapes involved, then allocates the result and dispatches to the backend of
// the operands' device. Tensor<D, K> (tensor.h) forwards here after its
// compile-time checks; code that only knows ranks at run time (checkpoints,
// generated records) calls these directly.
//
//   TensorBase x = ops::Full({2, 3}, 1.0, DType::kF32, Device::Cpu());
//   TensorBase y = ops::Binary(BinaryOp::kAdd, x, x);        // 2.0 everywhere
//   TensorBase s = ops::Reduce(ReduceOp::kSum, y, /*axis=*/1);  // [2, 1]
//
// Half-precision inputs (f16, bf16) are computed in f32 and rounded back.
// Binary ops need both operands of one dtype: convert with To() first.//
// The ops are grouped by family, one header each; this header gives them all:
//   creation_ops.h     Full, Arange
//   elementwise_ops.h  Unary, Binary, Where, MaskFill, the in-place writers
//   reduce_ops.h       Reduce, ReduceAll, Softmax
//   linalg_ops.h       Matmul
//   index_ops.h        Cat, Stack, IndexSelect, Gather, OneHot
#ifndef KINDLING_TENSOR_OPS_H_
#define KINDLING_TENSOR_OPS_H_

#include "kindling/tensor/creation_ops.h"     // IWYU pragma: export
#include "kindling/tensor/elementwise_ops.h"  // IWYU pragma: export
#include "kindling/tensor/index_ops.h"        // IWYU pragma: export
#include "kindling/tensor/linalg_ops.h"       // IWYU pragma: export
#include "kindling/tensor/reduce_ops.h"       // IWYU pragma: export

#endif  // KINDLING_TENSOR_OPS_H_
