#include "kindling/tensor/reduce_ops.h"

#include "kindling/core/check.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckFloating;
using internal::ComputeDType;

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
  const DType compute = ComputeDType(in.dtype());
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
}

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
  const DType compute = ComputeDType(in.dtype());
  TensorBase result = TensorBase::Empty(in.shape(), compute, in.device());
  if (result.numel() > 0) {
    GetBackend(in.device()).Softmax(result, in.To(compute), a, log);
  }
  return result.To(in.dtype());
}

}  // namespace kindling::ops
