#include "kindling/tensor/elementwise_ops.h"

#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/creation_ops.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::BroadcastOrDie;
using internal::CheckDefined;
using internal::CheckFloating;
using internal::CheckSameDevice;
using internal::ComputeDType;

namespace {

bool NeedsFloating(UnaryOp op) {
  switch (op) {
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSqrt:
    case UnaryOp::kGelu:
    case UnaryOp::kSigmoid:
    case UnaryOp::kTanh:
      return true;
    default:
      return false;
  }
}

}  // namespace

const char* UnaryOpName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
      return "neg";
    case UnaryOp::kAbs:
      return "abs";
    case UnaryOp::kExp:
      return "exp";
    case UnaryOp::kLog:
      return "log";
    case UnaryOp::kSqrt:
      return "sqrt";
    case UnaryOp::kRelu:
      return "relu";
    case UnaryOp::kGelu:
      return "gelu";
    case UnaryOp::kSigmoid:
      return "sigmoid";
    case UnaryOp::kTanh:
      return "tanh";
    case UnaryOp::kClamp:
      return "clamp";
    case UnaryOp::kLogicalNot:
      return "logical_not";
  }
  return "unary";
}

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kPow:
      return "pow";
    case BinaryOp::kMaximum:
      return "maximum";
    case BinaryOp::kMinimum:
      return "minimum";
    case BinaryOp::kEqual:
      return "equal";
    case BinaryOp::kNotEqual:
      return "not_equal";
    case BinaryOp::kLess:
      return "less";
    case BinaryOp::kLessEqual:
      return "less_equal";
    case BinaryOp::kGreater:
      return "greater";
    case BinaryOp::kGreaterEqual:
      return "greater_equal";
    case BinaryOp::kLogicalAnd:
      return "logical_and";
    case BinaryOp::kLogicalOr:
      return "logical_or";
  }
  return "binary";
}

TensorBase Unary(UnaryOp op, const TensorBase& in, double arg0, double arg1) {
  const char* name = UnaryOpName(op);
  CheckDefined(in, name);
  if (NeedsFloating(op)) CheckFloating(in, name);
  if (op == UnaryOp::kLogicalNot) {
    KINDLING_CHECK(in.dtype() == DType::kBool,
                   "%s: needs a bool tensor, got %s%s", name,
                   std::string(DTypeName(in.dtype())), in.shape().ToString());
  }
  if (op == UnaryOp::kClamp) {
    KINDLING_CHECK(!(arg0 > arg1), "clamp: min %g above max %g", arg0, arg1);
  }
  const DType compute = ComputeDType(in.dtype());
  const TensorBase input = in.To(compute);
  TensorBase result = TensorBase::Empty(in.shape(), compute, in.device());
  if (result.numel() > 0) {
    GetBackend(in.device()).Unary(op, result, input, arg0, arg1);
  }
  return result.To(in.dtype());
}

TensorBase Binary(BinaryOp op, const TensorBase& lhs, const TensorBase& rhs) {
  const char* name = BinaryOpName(op);
  CheckDefined(lhs, name);
  CheckDefined(rhs, name);
  CheckSameDevice(lhs, rhs, name);
  KINDLING_CHECK(lhs.dtype() == rhs.dtype(),
                 "%s: dtypes differ, %s%s vs %s%s (convert with to())", name,
                 std::string(DTypeName(lhs.dtype())), lhs.shape().ToString(),
                 std::string(DTypeName(rhs.dtype())), rhs.shape().ToString());
  const bool logical =
      op == BinaryOp::kLogicalAnd || op == BinaryOp::kLogicalOr;
  if (logical) {
    KINDLING_CHECK(lhs.dtype() == DType::kBool,
                   "%s: needs bool tensors, got %s", name,
                   std::string(DTypeName(lhs.dtype())));
  } else if (!IsComparison(op)) {
    KINDLING_CHECK(lhs.dtype() != DType::kBool,
                   "%s: arithmetic on bool tensors %s and %s", name,
                   lhs.shape().ToString(), rhs.shape().ToString());
  }
  const Shape shape = BroadcastOrDie(lhs, rhs, name);
  const DType compute = ComputeDType(lhs.dtype());
  const TensorBase a = lhs.To(compute).Expand(shape);
  const TensorBase b = rhs.To(compute).Expand(shape);
  const DType out_dtype = IsComparison(op) ? DType::kBool : compute;
  TensorBase result = TensorBase::Empty(shape, out_dtype, lhs.device());
  if (result.numel() > 0) GetBackend(lhs.device()).Binary(op, result, a, b);
  return IsComparison(op) ? result : result.To(lhs.dtype());
}

TensorBase BinaryScalar(BinaryOp op, const TensorBase& lhs, double scalar) {
  CheckDefined(lhs, BinaryOpName(op));
  return Binary(op, lhs, Full(Shape{}, scalar, lhs.dtype(), lhs.device()));
}

TensorBase ScalarBinary(BinaryOp op, double scalar, const TensorBase& rhs) {
  CheckDefined(rhs, BinaryOpName(op));
  return Binary(op, Full(Shape{}, scalar, rhs.dtype(), rhs.device()), rhs);
}

TensorBase Where(const TensorBase& condition, const TensorBase& on_true,
                 const TensorBase& on_false) {
  CheckDefined(condition, "where");
  CheckDefined(on_true, "where");
  CheckDefined(on_false, "where");
  CheckSameDevice(condition, on_true, "where");
  CheckSameDevice(condition, on_false, "where");
  KINDLING_CHECK(condition.dtype() == DType::kBool,
                 "where: condition must be bool, got %s%s",
                 std::string(DTypeName(condition.dtype())),
                 condition.shape().ToString());
  KINDLING_CHECK(
      on_true.dtype() == on_false.dtype(), "where: dtypes differ, %s%s vs %s%s",
      std::string(DTypeName(on_true.dtype())), on_true.shape().ToString(),
      std::string(DTypeName(on_false.dtype())), on_false.shape().ToString());
  Shape values_shape = BroadcastOrDie(on_true, on_false, "where");
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(condition.shape(), values_shape, &shape),
                 "where: condition shape %s and value shape %s cannot be "
                 "broadcast",
                 condition.shape().ToString(), values_shape.ToString());
  TensorBase result =
      TensorBase::Empty(shape, on_true.dtype(), on_true.device());
  if (result.numel() > 0) {
    GetBackend(result.device())
        .Where(result, condition.Expand(shape), on_true.Expand(shape),
               on_false.Expand(shape));
  }
  return result;
}

TensorBase MaskFill(const TensorBase& in, const TensorBase& mask,
                    double value) {
  CheckDefined(in, "mask_fill");
  CheckDefined(mask, "mask_fill");
  Shape shape;
  KINDLING_CHECK(
      BroadcastShapes(in.shape(), mask.shape(), &shape) && shape == in.shape(),
      "mask_fill: mask shape %s does not broadcast to input shape %s",
      mask.shape().ToString(), in.shape().ToString());
  return Where(mask, Full(Shape{}, value, in.dtype(), in.device()), in);
}

namespace {

void CheckWritableTarget(const TensorBase& self, const char* op) {
  for (int axis = 0; axis < self.rank(); ++axis) {
    KINDLING_CHECK(self.strides()[axis] != 0 || self.shape()[axis] <= 1,
                   "%s: in-place write to a broadcast (expanded) view of "
                   "shape %s",
                   op, self.shape().ToString());
  }
}

}  // namespace

void BinaryInPlace(BinaryOp op, TensorBase& self, const TensorBase& other) {
  const char* name = BinaryOpName(op);
  CheckDefined(self, name);
  CheckDefined(other, name);
  CheckSameDevice(self, other, name);
  KINDLING_CHECK(!IsComparison(op), "%s: has no in-place form", name);
  KINDLING_CHECK(
      self.dtype() == other.dtype(), "%s_: dtypes differ, %s%s vs %s%s", name,
      std::string(DTypeName(self.dtype())), self.shape().ToString(),
      std::string(DTypeName(other.dtype())), other.shape().ToString());
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(self.shape(), other.shape(), &shape) &&
                     shape == self.shape(),
                 "%s_: shape %s does not broadcast to %s", name,
                 other.shape().ToString(), self.shape().ToString());
  CheckWritableTarget(self, name);
  self.MakeWritable();
  if (self.numel() == 0) return;
  const DType compute = ComputeDType(self.dtype());
  if (compute == self.dtype()) {
    GetBackend(self.device()).Binary(op, self, self, other.Expand(shape));
    return;
  }
  TensorBase result = Binary(op, self, other);
  AssignInPlace(self, result);
}

void FillInPlace(TensorBase& self, double value) {
  CheckDefined(self, "fill_");
  CheckWritableTarget(self, "fill_");
  self.MakeWritable();
  if (self.numel() > 0) GetBackend(self.device()).Fill(self, value);
}

void AssignInPlace(TensorBase& self, const TensorBase& src) {
  CheckDefined(self, "assign_");
  CheckDefined(src, "assign_");
  CheckSameDevice(self, src, "assign_");
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(self.shape(), src.shape(), &shape) &&
                     shape == self.shape(),
                 "assign_: shape %s does not broadcast to %s",
                 src.shape().ToString(), self.shape().ToString());
  CheckWritableTarget(self, "assign_");
  self.MakeWritable();
  if (self.numel() > 0) {
    GetBackend(self.device()).Copy(self, src.Expand(self.shape()));
  }
}

}  // namespace kindling::ops
