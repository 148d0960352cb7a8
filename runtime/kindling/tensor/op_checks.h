// Operand checks and the compute-dtype rule shared by the op families
// (creation_ops.h, elementwise_ops.h, reduce_ops.h, linalg_ops.h,
// index_ops.h). Internal to runtime/kindling/tensor: each check aborts with a
// message naming the op, so every family reports bad operands the same way.
#ifndef KINDLING_TENSOR_OP_CHECKS_H_
#define KINDLING_TENSOR_OP_CHECKS_H_

#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops::internal {

// ComputeDType() is the dtype an op computes in: f16 and bf16 are computed in
// f32, every other dtype in itself.
DType ComputeDType(DType dtype);

// CheckDefined() aborts when `tensor` is undefined.
void CheckDefined(const TensorBase& tensor, const char* op);

// CheckSameDevice() aborts when `a` and `b` live on different devices.
void CheckSameDevice(const TensorBase& a, const TensorBase& b, const char* op);

// CheckFloating() aborts unless `tensor` has a floating-point dtype.
void CheckFloating(const TensorBase& tensor, const char* op);

// BroadcastOrDie() is the NumPy broadcast of a's and b's shapes; aborts when
// they do not broadcast.
Shape BroadcastOrDie(const TensorBase& a, const TensorBase& b, const char* op);

}  // namespace kindling::ops::internal

#endif  // KINDLING_TENSOR_OP_CHECKS_H_
