#include "kindling/tensor/reduce_ops.h"

#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckFloating;
using internal::ComputeDTypeOn;

namespace {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kArgMax:
      return "argmax";
    case ReduceOp::kArgMin:
      return "argmin";
  }
  return "reduce";
}

// The gradient of Reduce, defined right under it.
TensorBase ReduceGradient(ReduceOp op, const TensorBase& grad,
                          const Shape& input_shape, const TensorBase& x,
                          const TensorBase& y, int axis);

}  // namespace

TensorBase Reduce(ReduceOp op, const TensorBase& in, int axis) {
  const char* name = ReduceOpName(op);
  CheckDefined(in, name);
  const int a = in.NormalizeAxis(axis, name);
  KINDLING_CHECK(in.dtype() != DType::kBool,
                 "%s: bool tensor %s (convert first)", name,
                 in.shape().ToString());
  const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
  KINDLING_CHECK(in.shape()[a] > 0 || op == ReduceOp::kSum,
                 "%s: axis %d of shape %s is empty", name, a,
                 in.shape().ToString());
  const auto forward = [&] {
    const DType compute = ComputeDTypeOn(in.dtype(), in.device());
    Shape shape = in.shape();
    shape[a] = 1;
    TensorBase result =
        TensorBase::Empty(shape, arg ? DType::kI64 : compute, in.device());
    if (result.numel() == 0) return result;
    if (in.shape()[a] == 0) {
      GetBackend(in.device()).Fill(result, 0.0);
      return result;
    }
    GetBackend(in.device()).Reduce(op, result, in.To(compute), a);
    return arg ? result : result.To(in.dtype());
  };
  if (arg || !autodiff::ShouldRecord(in)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  // Sum and mean read only the shape; max and min find their elements.
  const bool extreme = op == ReduceOp::kMax || op == ReduceOp::kMin;
  return autodiff::Record(
      name, {in}, out,
      [op, input_shape = in.shape(), a,
       x = extreme ? SavedTensor(in) : SavedTensor(),
       y = extreme ? SavedTensor(out) : SavedTensor()](const TensorBase& grad) {
        return GradList{ReduceGradient(op, grad, input_shape, x, y, a)};
      });
}

namespace {

// ReduceGradient(): `grad` has the reduced shape (size 1 at `axis`); every
// input element gets its share, broadcast back along `axis`. x and y (input
// and result) are defined for max and min only.
TensorBase ReduceGradient(ReduceOp op, const TensorBase& grad,
                          const Shape& input_shape, const TensorBase& x,
                          const TensorBase& y, int axis) {
  switch (op) {
    case ReduceOp::kSum:
      return grad.Expand(input_shape);
    case ReduceOp::kMean:
      return BinaryScalar(BinaryOp::kMul, grad, 1.0 / input_shape[axis])
          .Expand(input_shape);
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      // The extreme elements share the gradient evenly (ties split it).
      const TensorBase hits = Binary(BinaryOp::kEqual, x, y).To(x.dtype());
      const TensorBase count = Reduce(ReduceOp::kSum, hits, axis);
      return Binary(BinaryOp::kMul, hits, Binary(BinaryOp::kDiv, grad, count));
    }
    case ReduceOp::kArgMax:
    case ReduceOp::kArgMin:
      break;
  }
  KINDLING_CHECK(false, "backward: %s has no gradient", ReduceOpName(op));
  return TensorBase();
}

}  // namespace

TensorBase ReduceAll(ReduceOp op, const TensorBase& in) {
  CheckDefined(in, ReduceOpName(op));
  const TensorBase flat = in.Reshape(Shape{in.numel()});
  return Reduce(op, flat, 0).Reshape(Shape{});
}

TensorBase Softmax(const TensorBase& in, int axis, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  CheckDefined(in, name);
  CheckFloating(in, name);
  const int a = in.NormalizeAxis(axis, name);
  const auto forward = [&] {
    const DType compute = ComputeDTypeOn(in.dtype(), in.device());
    TensorBase result = TensorBase::Empty(in.shape(), compute, in.device());
    if (result.numel() > 0) {
      GetBackend(in.device()).Softmax(result, in.To(compute), a, log);
    }
    return result.To(in.dtype());
  };
  if (!autodiff::ShouldRecord(in)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  return autodiff::Record(
      name, {in}, out,
      [y = SavedTensor(out), a, log](const TensorBase& grad) -> GradList {
        if (grad.numel() == 0) return {grad};
        if (log) {
          // d log_softmax: grad - softmax(x) * sum(grad).
          const TensorBase total = Reduce(ReduceOp::kSum, grad, a);
          return {
              Binary(BinaryOp::kSub, grad,
                     Binary(BinaryOp::kMul, Unary(UnaryOp::kExp, y), total))};
        }
        // d softmax: y * (grad - sum(grad * y)).
        const TensorBase dot =
            Reduce(ReduceOp::kSum, Binary(BinaryOp::kMul, grad, y), a);
        return {Binary(BinaryOp::kMul, y, Binary(BinaryOp::kSub, grad, dot))};
      });
}

}  // namespace kindling::ops
