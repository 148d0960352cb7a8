// Element-wise ops on TensorBase: unary and binary functions (NumPy
// broadcasting), where/mask_fill, and the in-place writers. See ops.h for
// the conventions all ops share.
#ifndef KINDLING_TENSOR_ELEMENTWISE_OPS_H_
#define KINDLING_TENSOR_ELEMENTWISE_OPS_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Unary() applies `op`; kClamp uses [arg0, arg1].
TensorBase Unary(UnaryOp op, const TensorBase& in, double arg0 = 0,
                 double arg1 = 0);
// Binary() applies `op` with NumPy broadcasting; comparisons return Bool.
TensorBase Binary(BinaryOp op, const TensorBase& lhs, const TensorBase& rhs);
// BinaryScalar() is Binary() with a rank-0 rhs of lhs's dtype holding
// `scalar` (same checks, values bit for bit, and gradient), but the scalar
// reaches the kernel by value: no tensor is made for it, so on a GPU the op
// is one launch and one allocation (its result).
TensorBase BinaryScalar(BinaryOp op, const TensorBase& lhs, double scalar);
// ScalarBinary() is BinaryScalar() with the scalar on the left.
TensorBase ScalarBinary(BinaryOp op, double scalar, const TensorBase& rhs);
// Where() picks on_true where `condition` (Bool) holds, else on_false; all
// three broadcast together.
TensorBase Where(const TensorBase& condition, const TensorBase& on_true,
                 const TensorBase& on_false);
// MaskFill() is `in` with `value` where `mask` holds.
TensorBase MaskFill(const TensorBase& in, const TensorBase& mask, double value);

// --- In place (copy on write for read-only storage) --------------------------
//
// In-place writes are not recorded for autodiff. While grad mode is on they
// refuse a target or a source that requires grad (autodiff::
// CheckInPlaceWrite); under a NoGradGuard anything goes. Each bumps the
// target storage's version, so a tensor saved for a backward that was
// written afterwards is caught when backward reads it (saved_tensor.h).

// BinaryInPlace(): self = op(self, other), other broadcast to self's shape.
void BinaryInPlace(BinaryOp op, TensorBase& self, const TensorBase& other);
// BinaryScalarInPlace(): self = op(self, scalar), BinaryScalar() in place
// (one kernel and no allocation where self's dtype is computed natively).
void BinaryScalarInPlace(BinaryOp op, TensorBase& self, double scalar);
// FillInPlace(): every element of self <- value.
void FillInPlace(TensorBase& self, double value);
// AssignInPlace(): self <- src (broadcast, converted to self's dtype).
void AssignInPlace(TensorBase& self, const TensorBase& src);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_ELEMENTWISE_OPS_H_
