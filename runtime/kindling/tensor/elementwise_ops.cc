#include "kindling/tensor/elementwise_ops.h"

#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/creation_ops.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::BroadcastOrDie;
using internal::CheckDefined;
using internal::CheckFloating;
using internal::CheckSameDevice;
using internal::ComputeDTypeOn;
using internal::ScalarAsStored;

namespace {

// Shorthands for the backward formulas below, which are written with ops so
// they run on every backend.
TensorBase Mul(const TensorBase& a, const TensorBase& b) {
  return Binary(BinaryOp::kMul, a, b);
}
TensorBase Div(const TensorBase& a, const TensorBase& b) {
  return Binary(BinaryOp::kDiv, a, b);
}
TensorBase Add(const TensorBase& a, const TensorBase& b) {
  return Binary(BinaryOp::kAdd, a, b);
}
TensorBase Neg(const TensorBase& a) { return Unary(UnaryOp::kNeg, a); }
// AsFloat() is a Bool mask as 0/1 of `dtype`.
TensorBase AsFloat(const TensorBase& mask, DType dtype) {
  return mask.To(dtype);
}

// The gradients of Unary and Binary, defined right under each.
TensorBase UnaryGradient(UnaryOp op, const TensorBase& grad,
                         const TensorBase& x, const TensorBase& y, double arg0,
                         double arg1);
std::pair<TensorBase, TensorBase> BinaryGradients(
    BinaryOp op, const TensorBase& grad, const TensorBase& a,
    const TensorBase& b, const TensorBase& y, bool need_a, bool need_b);

// CheckOperandDType() aborts when `op` is not defined on operands of
// `dtype` (shapes lhs_shape and rhs_shape, for the message): the logical
// ops need bool, arithmetic refuses it, the floating-point ops need f16,
// bf16, f32 or f64.
void CheckOperandDType(BinaryOp op, DType dtype, const Shape& lhs_shape,
                       const Shape& rhs_shape) {
  const char* name = BinaryOpName(op);
  if (IsLogical(op)) {
    KINDLING_CHECK(dtype == DType::kBool, "%s: needs bool tensors, got %s",
                   name, std::string(DTypeName(dtype)));
  } else if (!WritesBool(op)) {
    KINDLING_CHECK(dtype != DType::kBool,
                   "%s: arithmetic on bool tensors %s and %s", name,
                   lhs_shape.ToString(), rhs_shape.ToString());
  }
  if (BinaryKind(op) == OpOperands::kFloating) {
    KINDLING_CHECK(IsFloatingDType(dtype),
                   "%s: needs floating-point tensors, got %s %s and %s", name,
                   std::string(DTypeName(dtype)), lhs_shape.ToString(),
                   rhs_shape.ToString());
  }
}

// RecordedGeluWithSlope() is gelu(in) recorded for autodiff with GELU's
// slope saved instead of the input, where the backend computes the two in
// one pass (Backend::GeluWithSlope): the backward is then one multiply
// instead of the slope's exponential and polynomial again. The graph keeps
// a tensor of in's size either way; where nothing else keeps the input
// (a layer's pre-activation), no more memory than before. Its gradient has
// Binary(kGeluBackward)'s bits. Returns an undefined tensor, having
// computed nothing, where the backend has no such kernel for `in`.
TensorBase RecordedGeluWithSlope(const TensorBase& in) {
  if (in.numel() == 0 ||
      ComputeDTypeOn(in.dtype(), in.device()) != in.dtype()) {
    return TensorBase();
  }
  TensorBase out, slope;
  if (!GetBackend(in.device()).GeluWithSlope(in, &out, &slope)) {
    return TensorBase();
  }
  return autodiff::Record(
      UnaryOpName(UnaryOp::kGelu), {in}, std::move(out),
      [slope = SavedTensor(std::move(slope))](
          const TensorBase& grad) -> GradList { return {Mul(grad, slope)}; });
}

}  // namespace

TensorBase Unary(UnaryOp op, const TensorBase& in, double arg0, double arg1) {
  const char* name = UnaryOpName(op);
  CheckDefined(in, name);
  if (UnaryOperands(op) == OpOperands::kFloating) CheckFloating(in, name);
  if (UnaryOperands(op) == OpOperands::kBool) {
    KINDLING_CHECK(in.dtype() == DType::kBool,
                   "%s: needs a bool tensor, got %s%s", name,
                   std::string(DTypeName(in.dtype())), in.shape().ToString());
  }
  if (op == UnaryOp::kClamp) {
    KINDLING_CHECK(!(arg0 > arg1), "clamp: min %g above max %g", arg0, arg1);
  }
  const auto forward = [&] {
    const DType compute = ComputeDTypeOn(in.dtype(), in.device());
    const TensorBase input = in.To(compute);
    TensorBase result = TensorBase::Empty(in.shape(), compute, in.device());
    if (result.numel() > 0) {
      GetBackend(in.device()).Unary(op, result, input, arg0, arg1);
    }
    return result.To(in.dtype());
  };
  if (!autodiff::ShouldRecord(in)) return forward();
  if (op == UnaryOp::kGelu) {
    TensorBase gelu = RecordedGeluWithSlope(in);
    if (gelu.defined()) return gelu;
  }
  TensorBase out = autodiff::Untracked(forward);
  // Only what the gradient reads is saved, so the graph keeps no more
  // tensors alive than it needs.
  const GradientReads saves = UnarySaves(op);
  const bool reads_input =
      saves == GradientReads::kInput || saves == GradientReads::kInputAndResult;
  const bool reads_result = saves == GradientReads::kResult ||
                            saves == GradientReads::kInputAndResult;
  return autodiff::Record(
      name, {in}, out,
      [op, x = reads_input ? SavedTensor(in) : SavedTensor(),
       y = reads_result ? SavedTensor(out) : SavedTensor(), arg0,
       arg1](const TensorBase& grad) -> GradList {
        return {UnaryGradient(op, grad, x, y, arg0, arg1)};
      });
}

namespace {

// UnaryGradient() is d(op)/dx * grad, given the input x and result y (each
// undefined when the op's gradient does not read it).
TensorBase UnaryGradient(UnaryOp op, const TensorBase& grad,
                         const TensorBase& x, const TensorBase& y, double arg0,
                         double arg1) {
  const DType dtype = grad.dtype();
  switch (op) {
    case UnaryOp::kNeg:
      return Neg(grad);
    case UnaryOp::kAbs: {
      // sign(x), 0 at 0.
      const TensorBase sign =
          Binary(BinaryOp::kSub,
                 AsFloat(BinaryScalar(BinaryOp::kGreater, x, 0), dtype),
                 AsFloat(BinaryScalar(BinaryOp::kLess, x, 0), dtype));
      return Mul(grad, sign);
    }
    case UnaryOp::kExp:
      return Mul(grad, y);
    case UnaryOp::kLog:
      return Div(grad, x);
    case UnaryOp::kSqrt:
      return Div(grad, BinaryScalar(BinaryOp::kMul, y, 2));
    case UnaryOp::kRelu:
      return Binary(BinaryOp::kReluBackward, grad, x);
    case UnaryOp::kGelu:
      // d/dx x Phi(x) = Phi(x) + x phi(x), in one pass.
      return Binary(BinaryOp::kGeluBackward, grad, x);
    case UnaryOp::kSigmoid:
      return Mul(grad, Mul(y, ScalarBinary(BinaryOp::kSub, 1, y)));
    case UnaryOp::kTanh:
      return Mul(grad, ScalarBinary(BinaryOp::kSub, 1, Mul(y, y)));
    case UnaryOp::kClamp: {
      // The gradient passes where min <= x <= max.
      const TensorBase outside =
          Binary(BinaryOp::kLogicalOr, BinaryScalar(BinaryOp::kLess, x, arg0),
                 BinaryScalar(BinaryOp::kGreater, x, arg1));
      return MaskFill(grad, outside, 0);
    }
    case UnaryOp::kLogicalNot:
      break;
  }
  KINDLING_CHECK(false, "backward: %s has no gradient", UnaryOpName(op));
  return TensorBase();
}

}  // namespace

TensorBase Binary(BinaryOp op, const TensorBase& lhs, const TensorBase& rhs) {
  const char* name = BinaryOpName(op);
  CheckDefined(lhs, name);
  CheckDefined(rhs, name);
  CheckSameDevice(lhs, rhs, name);
  KINDLING_CHECK(lhs.dtype() == rhs.dtype(),
                 "%s: dtypes differ, %s%s vs %s%s (convert with to())", name,
                 std::string(DTypeName(lhs.dtype())), lhs.shape().ToString(),
                 std::string(DTypeName(rhs.dtype())), rhs.shape().ToString());
  const bool logical = IsLogical(op);
  CheckOperandDType(op, lhs.dtype(), lhs.shape(), rhs.shape());
  const Shape shape = BroadcastOrDie(lhs, rhs, name);
  const auto forward = [&] {
    const DType compute = ComputeDTypeOn(lhs.dtype(), lhs.device());
    const TensorBase a = lhs.To(compute).Expand(shape);
    const TensorBase b = rhs.To(compute).Expand(shape);
    const DType out_dtype = WritesBool(op) ? DType::kBool : compute;
    TensorBase result = TensorBase::Empty(shape, out_dtype, lhs.device());
    if (result.numel() > 0) GetBackend(lhs.device()).Binary(op, result, a, b);
    return WritesBool(op) ? result : result.To(lhs.dtype());
  };
  if (WritesBool(op) || logical || !autodiff::ShouldRecord(lhs, rhs)) {
    return forward();
  }
  TensorBase out = autodiff::Untracked(forward);
  const bool need_a = lhs.is_require_grad();
  const bool need_b = rhs.is_require_grad();
  // Only what the gradients read is saved: add and sub read nothing.
  const bool reads_a = (op == BinaryOp::kMul && need_b) ||
                       (op == BinaryOp::kGeluBackward && need_b) ||
                       op == BinaryOp::kPow || op == BinaryOp::kMaximum ||
                       op == BinaryOp::kMinimum;
  const bool reads_b = (op == BinaryOp::kMul && need_a) ||
                       op == BinaryOp::kDiv || op == BinaryOp::kPow ||
                       op == BinaryOp::kReluBackward ||
                       op == BinaryOp::kGeluBackward ||
                       op == BinaryOp::kMaximum || op == BinaryOp::kMinimum;
  const bool reads_result =
      (op == BinaryOp::kDiv || op == BinaryOp::kPow) && need_b;
  return autodiff::Record(
      name, {lhs, rhs}, out,
      [op, a = reads_a ? SavedTensor(lhs) : SavedTensor(),
       b = reads_b ? SavedTensor(rhs) : SavedTensor(),
       y = reads_result ? SavedTensor(out) : SavedTensor(),
       a_shape = lhs.shape(), b_shape = rhs.shape(), need_a,
       need_b](const TensorBase& grad) -> GradList {
        auto [grad_a, grad_b] =
            BinaryGradients(op, grad, a, b, y, need_a, need_b);
        return {need_a ? autodiff::SumToShape(grad_a, a_shape) : TensorBase(),
                need_b ? autodiff::SumToShape(grad_b, b_shape) : TensorBase()};
      });
}

namespace {

// BinaryGradients() are the gradients of op(a, b) = y for a and b, in the
// broadcast shape (the caller sums them back to each input's shape); only
// those asked for are computed, and a, b, y are defined only where read.
std::pair<TensorBase, TensorBase> BinaryGradients(
    BinaryOp op, const TensorBase& grad, const TensorBase& a,
    const TensorBase& b, const TensorBase& y, bool need_a, bool need_b) {
  TensorBase grad_a, grad_b;
  switch (op) {
    case BinaryOp::kAdd:
      return {grad, grad};
    case BinaryOp::kSub:
      return {grad, need_b ? Neg(grad) : TensorBase()};
    case BinaryOp::kMul:
      if (need_a) grad_a = Mul(grad, b);
      if (need_b) grad_b = Mul(grad, a);
      return {grad_a, grad_b};
    case BinaryOp::kDiv:
      if (need_a) grad_a = Div(grad, b);
      if (need_b) grad_b = Neg(Div(Mul(grad, y), b));  // -grad * a / b^2
      return {grad_a, grad_b};
    case BinaryOp::kPow: {
      // d/da a^b = b a^(b-1), taken as 0 where b == 0 (a^0 is constant);
      // d/db a^b = a^b log(a), taken as 0 where a == 0.
      if (need_a) {
        const TensorBase slope = Mul(
            b, Binary(BinaryOp::kPow, a, BinaryScalar(BinaryOp::kSub, b, 1)));
        grad_a = Mul(grad, MaskFill(slope.Expand(grad.shape()),
                                    BinaryScalar(BinaryOp::kEqual, b, 0), 0));
      }
      if (need_b) {
        const TensorBase slope = Mul(y, Unary(UnaryOp::kLog, a));
        grad_b = Mul(grad, MaskFill(slope.Expand(grad.shape()),
                                    BinaryScalar(BinaryOp::kEqual, a, 0), 0));
      }
      return {grad_a, grad_b};
    }
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum: {
      // The winner takes the gradient; a tie splits it evenly.
      const BinaryOp wins =
          op == BinaryOp::kMaximum ? BinaryOp::kGreater : BinaryOp::kLess;
      const DType dtype = grad.dtype();
      const TensorBase weight_a = Add(
          AsFloat(Binary(wins, a, b), dtype),
          BinaryScalar(BinaryOp::kMul,
                       AsFloat(Binary(BinaryOp::kEqual, a, b), dtype), 0.5));
      if (need_a) grad_a = Mul(grad, weight_a);
      if (need_b) {
        grad_b = Mul(grad, ScalarBinary(BinaryOp::kSub, 1, weight_a));
      }
      return {grad_a, grad_b};
    }
    case BinaryOp::kReluBackward:
      // Linear in the gradient it masks; piecewise constant in the input.
      if (need_a) grad_a = Binary(BinaryOp::kReluBackward, grad, b);
      if (need_b)
        grad_b = autodiff::Zeros(grad.shape(), grad.dtype(), grad.device());
      return {grad_a, grad_b};
    case BinaryOp::kGeluBackward:
      // a * GELU'(b): linear in a; GELU''(b) = phi(b) (2 - b^2).
      if (need_a) grad_a = Binary(BinaryOp::kGeluBackward, grad, b);
      if (need_b) {
        const TensorBase square = Mul(b, b);
        const TensorBase density = BinaryScalar(
            BinaryOp::kMul,
            Unary(UnaryOp::kExp, BinaryScalar(BinaryOp::kMul, square, -0.5)),
            1.0 / std::sqrt(2 * std::numbers::pi));
        const TensorBase curvature =
            Mul(density, ScalarBinary(BinaryOp::kSub, 2, square));
        grad_b = Mul(Mul(grad, a), curvature);
      }
      return {grad_a, grad_b};
    default:
      break;
  }
  KINDLING_CHECK(false, "backward: %s has no gradient", BinaryOpName(op));
  return {};
}

}  // namespace

namespace {

// The gradient of a scalar op, defined right under it.
TensorBase ScalarOpGradient(BinaryOp op, const TensorBase& grad,
                            const TensorBase& x, const TensorBase& y,
                            double scalar, bool scalar_is_lhs);

// ScalarOp() is op(tensor, scalar), or op(scalar, tensor) when
// `scalar_is_lhs`: Binary() with a rank-0 operand of tensor's dtype holding
// `scalar`, with the same checks, values and gradient, but the scalar goes
// to the backend by value (Backend::BinaryScalar): no allocation and no
// fill for it.
TensorBase ScalarOp(BinaryOp op, const TensorBase& tensor, double scalar,
                    bool scalar_is_lhs) {
  const char* name = BinaryOpName(op);
  CheckDefined(tensor, name);
  CheckOperandDType(op, tensor.dtype(),
                    scalar_is_lhs ? Shape{} : tensor.shape(),
                    scalar_is_lhs ? tensor.shape() : Shape{});
  const auto forward = [&] {
    Backend& backend = GetBackend(tensor.device());
    const DType compute =
        internal::ComputeDType(tensor.dtype(), backend.ComputesHalfNatively());
    // Computed in f32 for an f16/bf16 tensor, the scalar is first rounded
    // as an f16/bf16 rank-0 operand would hold it.
    const double value = compute == tensor.dtype()
                             ? scalar
                             : ScalarAsStored(scalar, tensor.dtype());
    const TensorBase input = tensor.To(compute);
    const DType out_dtype = WritesBool(op) ? DType::kBool : compute;
    TensorBase result =
        TensorBase::Empty(tensor.shape(), out_dtype, tensor.device());
    if (result.numel() > 0) {
      backend.BinaryScalar(op, result, input, value, scalar_is_lhs);
    }
    return WritesBool(op) ? result : result.To(tensor.dtype());
  };
  if (WritesBool(op) || IsLogical(op) || !autodiff::ShouldRecord(tensor)) {
    return forward();
  }
  TensorBase out = autodiff::Untracked(forward);
  // Only what the gradient reads is saved (x the tensor, y the result).
  const bool reads_x = op == BinaryOp::kMaximum || op == BinaryOp::kMinimum ||
                       (op == BinaryOp::kPow && !scalar_is_lhs) ||
                       (op == BinaryOp::kDiv && scalar_is_lhs) ||
                       (op == BinaryOp::kGeluBackward && scalar_is_lhs);
  const bool reads_y =
      scalar_is_lhs && (op == BinaryOp::kDiv || op == BinaryOp::kPow);
  return autodiff::Record(
      name, {tensor}, out,
      [op, x = reads_x ? SavedTensor(tensor) : SavedTensor(),
       y = reads_y ? SavedTensor(out) : SavedTensor(), scalar,
       scalar_is_lhs](const TensorBase& grad) -> GradList {
        return {ScalarOpGradient(op, grad, x, y, scalar, scalar_is_lhs)};
      });
}

// ScalarOpGradient() is the gradient of op(x, s) (or op(s, x)) for x: the
// tensor side of BinaryGradients() with a constant operand. The common
// linear cases pass the scalar by value; the others materialize it as the
// rank-0 tensor Binary() would have saved (only here, in the backward) and
// reuse BinaryGradients, so the two paths cannot drift apart.
TensorBase ScalarOpGradient(BinaryOp op, const TensorBase& grad,
                            const TensorBase& x, const TensorBase& y,
                            double scalar, bool scalar_is_lhs) {
  switch (op) {
    case BinaryOp::kAdd:
      return grad;
    case BinaryOp::kSub:
      return scalar_is_lhs ? Neg(grad) : grad;
    case BinaryOp::kMul:
      return BinaryScalar(BinaryOp::kMul, grad, scalar);
    case BinaryOp::kDiv:
      if (!scalar_is_lhs) return BinaryScalar(BinaryOp::kDiv, grad, scalar);
      break;  // s / x reads x and y only
    default:
      break;
  }
  const bool reads_scalar = !(op == BinaryOp::kDiv && scalar_is_lhs);
  const TensorBase constant =
      reads_scalar ? Full(Shape{}, scalar, grad.dtype(), grad.device())
                   : TensorBase();
  if (scalar_is_lhs) {
    return BinaryGradients(op, grad, constant, x, y, /*need_a=*/false,
                           /*need_b=*/true)
        .second;
  }
  return BinaryGradients(op, grad, x, constant, y, /*need_a=*/true,
                         /*need_b=*/false)
      .first;
}

}  // namespace

TensorBase BinaryScalar(BinaryOp op, const TensorBase& lhs, double scalar) {
  return ScalarOp(op, lhs, scalar, /*scalar_is_lhs=*/false);
}

TensorBase ScalarBinary(BinaryOp op, double scalar, const TensorBase& rhs) {
  return ScalarOp(op, rhs, scalar, /*scalar_is_lhs=*/true);
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
  const auto forward = [&] {
    TensorBase result =
        TensorBase::Empty(shape, on_true.dtype(), on_true.device());
    if (result.numel() > 0) {
      GetBackend(result.device())
          .Where(result, condition.Expand(shape), on_true.Expand(shape),
                 on_false.Expand(shape));
    }
    return result;
  };
  if (!autodiff::ShouldRecord(on_true, on_false)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  // Each side gets the gradient where it was picked, zero elsewhere.
  return autodiff::Record(
      "where", {condition, on_true, on_false}, std::move(out),
      [condition = SavedTensor(condition), true_shape = on_true.shape(),
       false_shape = on_false.shape(), need_true = on_true.is_require_grad(),
       need_false =
           on_false.is_require_grad()](const TensorBase& grad) -> GradList {
        TensorBase grad_true, grad_false;
        if (need_true) {
          grad_true = autodiff::SumToShape(
              MaskFill(grad, Unary(UnaryOp::kLogicalNot, condition), 0),
              true_shape);
        }
        if (need_false) {
          grad_false =
              autodiff::SumToShape(MaskFill(grad, condition, 0), false_shape);
        }
        return {TensorBase(), grad_true, grad_false};
      });
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
  KINDLING_CHECK(!WritesBool(op), "%s: has no in-place form", name);
  KINDLING_CHECK(
      self.dtype() == other.dtype(), "%s_: dtypes differ, %s%s vs %s%s", name,
      std::string(DTypeName(self.dtype())), self.shape().ToString(),
      std::string(DTypeName(other.dtype())), other.shape().ToString());
  CheckOperandDType(op, self.dtype(), self.shape(), other.shape());
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(self.shape(), other.shape(), &shape) &&
                     shape == self.shape(),
                 "%s_: shape %s does not broadcast to %s", name,
                 other.shape().ToString(), self.shape().ToString());
  CheckWritableTarget(self, name);
  autodiff::CheckInPlaceWrite(name, self, other);
  self.MakeWritable();
  if (self.numel() == 0) return;
  const DType compute = ComputeDTypeOn(self.dtype(), self.device());
  if (compute == self.dtype()) {
    GetBackend(self.device()).Binary(op, self, self, other.Expand(shape));
    return;
  }
  const TensorBase result =
      autodiff::Untracked([&] { return Binary(op, self, other); });
  AssignInPlace(self, result);
}

void BinaryScalarInPlace(BinaryOp op, TensorBase& self, double scalar) {
  const char* name = BinaryOpName(op);
  CheckDefined(self, name);
  KINDLING_CHECK(!WritesBool(op), "%s: has no in-place form", name);
  CheckOperandDType(op, self.dtype(), self.shape(), Shape{});
  CheckWritableTarget(self, name);
  autodiff::CheckInPlaceWrite(name, self, TensorBase());
  self.MakeWritable();
  if (self.numel() == 0) return;
  Backend& backend = GetBackend(self.device());
  const DType compute =
      internal::ComputeDType(self.dtype(), backend.ComputesHalfNatively());
  if (compute == self.dtype()) {
    backend.BinaryScalar(op, self, self, scalar, /*scalar_is_lhs=*/false);
    return;
  }
  const TensorBase result =
      autodiff::Untracked([&] { return BinaryScalar(op, self, scalar); });
  AssignInPlace(self, result);
}

void FillInPlace(TensorBase& self, double value) {
  CheckDefined(self, "fill_");
  CheckWritableTarget(self, "fill_");
  autodiff::CheckInPlaceWrite("fill", self, TensorBase());
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
  autodiff::CheckInPlaceWrite("assign", self, src);
  self.MakeWritable();
  if (self.numel() > 0) {
    GetBackend(self.device()).Copy(self, src.Expand(self.shape()));
  }
}

}  // namespace kindling::ops
