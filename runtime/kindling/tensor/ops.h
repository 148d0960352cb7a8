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
// Binary ops need both operands of one dtype: convert with To() first.
#ifndef KINDLING_TENSOR_OPS_H_
#define KINDLING_TENSOR_OPS_H_

#include <cstdint>
#include <span>

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// --- Creation ----------------------------------------------------------------

// Full() is `shape` filled with `value` converted to `dtype`.
TensorBase Full(const Shape& shape, double value, DType dtype,
                const Device& device);
// Arange() is start, start+step, ... below end, 1-D.
TensorBase Arange(double start, double end, double step, DType dtype,
                  const Device& device);

// --- Element-wise ------------------------------------------------------------

// UnaryOpName() / BinaryOpName() are the op names used in messages.
const char* UnaryOpName(UnaryOp op);
const char* BinaryOpName(BinaryOp op);

// Unary() applies `op`; kClamp uses [arg0, arg1].
TensorBase Unary(UnaryOp op, const TensorBase& in, double arg0 = 0,
                 double arg1 = 0);
// Binary() applies `op` with NumPy broadcasting; comparisons return Bool.
TensorBase Binary(BinaryOp op, const TensorBase& lhs, const TensorBase& rhs);
// BinaryScalar() is Binary() with a rank-0 rhs holding `scalar`.
TensorBase BinaryScalar(BinaryOp op, const TensorBase& lhs, double scalar);
// ScalarBinary() is Binary() with a rank-0 lhs holding `scalar`.
TensorBase ScalarBinary(BinaryOp op, double scalar, const TensorBase& rhs);
// Where() picks on_true where `condition` (Bool) holds, else on_false; all
// three broadcast together.
TensorBase Where(const TensorBase& condition, const TensorBase& on_true,
                 const TensorBase& on_false);
// MaskFill() is `in` with `value` where `mask` holds.
TensorBase MaskFill(const TensorBase& in, const TensorBase& mask, double value);

// --- In place (copy on write for read-only storage) --------------------------

// BinaryInPlace(): self = op(self, other), other broadcast to self's shape.
void BinaryInPlace(BinaryOp op, TensorBase& self, const TensorBase& other);
// FillInPlace(): every element of self <- value.
void FillInPlace(TensorBase& self, double value);
// AssignInPlace(): self <- src (broadcast, converted to self's dtype).
void AssignInPlace(TensorBase& self, const TensorBase& src);

// --- Reductions --------------------------------------------------------------

// Reduce() reduces `axis`, keeping it with size 1. kArgMax/kArgMin give i64.
TensorBase Reduce(ReduceOp op, const TensorBase& in, int axis);
// ReduceAll() reduces every element to a rank-0 tensor.
TensorBase ReduceAll(ReduceOp op, const TensorBase& in);
// Softmax() along `axis`: exp(x - max) / sum, or its log when `log`.
TensorBase Softmax(const TensorBase& in, int axis, bool log);

// --- Linear algebra and indexing ---------------------------------------------

// Matmul(): [.., M, K] x [.., K, N] -> [.., M, N], batch dims broadcast.
TensorBase Matmul(const TensorBase& lhs, const TensorBase& rhs);
// Cat() joins tensors of one rank along an existing axis.
TensorBase Cat(std::span<const TensorBase> tensors, int axis);
// Stack() joins tensors of one shape along a new axis.
TensorBase Stack(std::span<const TensorBase> tensors, int axis);
// IndexSelect(): picks entries `index` (1-D integer) of `axis`.
TensorBase IndexSelect(const TensorBase& in, int axis, const TensorBase& index);
// Gather(): out[.., i, ..] = in[.., index[.., i, ..], ..] along `axis`.
TensorBase Gather(const TensorBase& in, int axis, const TensorBase& index);
// OneHot(): appends an axis of `num_classes`; 1 at each index, else 0.
TensorBase OneHot(const TensorBase& index, int64_t num_classes, DType dtype);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_OPS_H_
