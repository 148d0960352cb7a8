// Operand checks and the compute-dtype rule shared by the op families
// (creation_ops.h, elementwise_ops.h, reduce_ops.h, linalg_ops.h,
// index_ops.h). Internal to runtime/kindling/tensor: each check aborts with a
// message naming the op, so every family reports bad operands the same way.
#ifndef KINDLING_TENSOR_OP_CHECKS_H_
#define KINDLING_TENSOR_OP_CHECKS_H_

#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops::internal {

// ComputeDType() is the dtype an op computes in: f16 and bf16 are computed in
// f32, every other dtype in itself. The window, convolution and scatter-add
// families use it on every backend.
DType ComputeDType(DType dtype);

// ComputeDType(dtype, half_native) is the dtype an op hands its backend:
// `dtype` itself when the backend computes 16-bit floats natively
// (`half_native`), else ComputeDType(dtype). The decision, apart from the
// backend lookup, so it can be tested without one.
DType ComputeDType(DType dtype, bool half_native);

// ComputeDTypeOn() is ComputeDType(dtype, half_native) for the backend serving
// `device` (Backend::ComputesHalfNatively()): for the op families whose
// kernels may take f16/bf16 themselves, namely unary, binary, binary-scalar,
// reduce, softmax and matmul.
DType ComputeDTypeOn(DType dtype, const Device& device);

// ScalarAsStored() is `value` as a tensor of `dtype` stores it, widened back
// to double, for the 16-bit floats (f16, bf16: rounded to nearest even as
// Full() rounds); any other dtype returns `value`, since its backend
// converts the scalar itself. A scalar op computed in f32 for an f16 tensor
// passes this, so it matches the op with a rank-0 f16 operand.
double ScalarAsStored(double value, DType dtype);

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
