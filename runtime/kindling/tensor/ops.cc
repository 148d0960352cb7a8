#include "kindling/tensor/ops.h"

#include <cmath>
#include <string>
#include <vector>

#include "kindling/core/check.h"

namespace kindling::ops {
namespace {

// Half-precision tensors are computed in f32: no CPU has useful f16
// arithmetic for these ops, and rounding once at the end is more accurate.
DType ComputeDType(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 ? DType::kF32 : dtype;
}

void CheckDefined(const TensorBase& tensor, const char* op) {
  KINDLING_CHECK(tensor.defined(), "%s: undefined tensor", op);
}

void CheckSameDevice(const TensorBase& a, const TensorBase& b, const char* op) {
  KINDLING_CHECK(a.device() == b.device(),
                 "%s: tensors on different devices (%s %s vs %s %s)", op,
                 a.device().ToString(), a.shape().ToString(),
                 b.device().ToString(), b.shape().ToString());
}

void CheckFloating(const TensorBase& tensor, const char* op) {
  KINDLING_CHECK(IsFloatingDType(tensor.dtype()),
                 "%s: needs a floating-point tensor, got %s%s", op,
                 std::string(DTypeName(tensor.dtype())),
                 tensor.shape().ToString());
}

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

Shape BroadcastOrDie(const TensorBase& a, const TensorBase& b, const char* op) {
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(a.shape(), b.shape(), &shape),
                 "%s: shapes %s and %s cannot be broadcast", op,
                 a.shape().ToString(), b.shape().ToString());
  return shape;
}

}  // namespace

TensorBase Full(const Shape& shape, double value, DType dtype,
                const Device& device) {
  TensorBase result = TensorBase::Empty(shape, dtype, device);
  if (result.numel() > 0) GetBackend(device).Fill(result, value);
  return result;
}

TensorBase Arange(double start, double end, double step, DType dtype,
                  const Device& device) {
  KINDLING_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end),
                 "arange: invalid range start %g end %g step %g", start, end,
                 step);
  const double count = std::ceil((end - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + step * i;
  TensorBase f64 =
      TensorBase::FromHost(values.data(), Shape{n}, DType::kF64, device);
  return f64.To(dtype);
}

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

TensorBase Matmul(const TensorBase& lhs, const TensorBase& rhs) {
  CheckDefined(lhs, "matmul");
  CheckDefined(rhs, "matmul");
  CheckSameDevice(lhs, rhs, "matmul");
  KINDLING_CHECK(lhs.rank() >= 2 && rhs.rank() >= 2,
                 "matmul: needs rank >= 2, got shapes %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  KINDLING_CHECK(lhs.dtype() == rhs.dtype(),
                 "matmul: dtypes differ, %s%s vs %s%s",
                 std::string(DTypeName(lhs.dtype())), lhs.shape().ToString(),
                 std::string(DTypeName(rhs.dtype())), rhs.shape().ToString());
  KINDLING_CHECK(lhs.dtype() != DType::kBool, "matmul: bool tensors %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  const int64_t m = lhs.shape()[lhs.rank() - 2];
  const int64_t k = lhs.shape()[lhs.rank() - 1];
  const int64_t k2 = rhs.shape()[rhs.rank() - 2];
  const int64_t n = rhs.shape()[rhs.rank() - 1];
  KINDLING_CHECK(k == k2, "matmul: inner dimensions differ, shapes %s and %s",
                 lhs.shape().ToString(), rhs.shape().ToString());
  const Shape lhs_batch(lhs.shape().dims().first(lhs.rank() - 2));
  const Shape rhs_batch(rhs.shape().dims().first(rhs.rank() - 2));
  Shape batch;
  KINDLING_CHECK(BroadcastShapes(lhs_batch, rhs_batch, &batch),
                 "matmul: batch dimensions of shapes %s and %s cannot be "
                 "broadcast",
                 lhs.shape().ToString(), rhs.shape().ToString());
  Shape lhs_shape = batch, rhs_shape = batch, out_shape = batch;
  lhs_shape.push_back(m);
  lhs_shape.push_back(k);
  rhs_shape.push_back(k);
  rhs_shape.push_back(n);
  out_shape.push_back(m);
  out_shape.push_back(n);
  const DType compute = ComputeDType(lhs.dtype());
  TensorBase result = TensorBase::Empty(out_shape, compute, lhs.device());
  if (result.numel() == 0) return result.To(lhs.dtype());
  if (k == 0) {
    GetBackend(lhs.device()).Fill(result, 0.0);
  } else {
    GetBackend(lhs.device())
        .Matmul(result, lhs.To(compute).Expand(lhs_shape),
                rhs.To(compute).Expand(rhs_shape));
  }
  return result.To(lhs.dtype());
}

TensorBase Cat(std::span<const TensorBase> tensors, int axis) {
  KINDLING_CHECK(!tensors.empty(), "cat: no tensors");
  const TensorBase& first = tensors[0];
  CheckDefined(first, "cat");
  const int a = first.NormalizeAxis(axis, "cat");
  Shape shape = first.shape();
  int64_t total = 0;
  for (const TensorBase& tensor : tensors) {
    CheckDefined(tensor, "cat");
    CheckSameDevice(first, tensor, "cat");
    KINDLING_CHECK(tensor.dtype() == first.dtype(),
                   "cat: dtypes differ, %s vs %s",
                   std::string(DTypeName(first.dtype())),
                   std::string(DTypeName(tensor.dtype())));
    bool compatible = tensor.rank() == first.rank();
    for (int i = 0; compatible && i < first.rank(); ++i) {
      compatible = i == a || tensor.shape()[i] == first.shape()[i];
    }
    KINDLING_CHECK(compatible, "cat: shapes %s and %s differ outside axis %d",
                   first.shape().ToString(), tensor.shape().ToString(), a);
    total += tensor.shape()[a];
  }
  shape[a] = total;
  TensorBase result = TensorBase::Empty(shape, first.dtype(), first.device());
  int64_t start = 0;
  for (const TensorBase& tensor : tensors) {
    const int64_t length = tensor.shape()[a];
    if (length > 0 && tensor.numel() > 0) {
      GetBackend(result.device()).Copy(result.Narrow(a, start, length), tensor);
    }
    start += length;
  }
  return result;
}

TensorBase Stack(std::span<const TensorBase> tensors, int axis) {
  KINDLING_CHECK(!tensors.empty(), "stack: no tensors");
  CheckDefined(tensors[0], "stack");
  const int rank = tensors[0].rank();
  const int a = axis < 0 ? axis + rank + 1 : axis;
  KINDLING_CHECK(a >= 0 && a <= rank,
                 "stack: axis %d out of range for shape %s", axis,
                 tensors[0].shape().ToString());
  std::vector<TensorBase> expanded;
  expanded.reserve(tensors.size());
  for (const TensorBase& tensor : tensors) {
    CheckDefined(tensor, "stack");
    KINDLING_CHECK(tensor.shape() == tensors[0].shape(),
                   "stack: shapes %s and %s differ",
                   tensors[0].shape().ToString(), tensor.shape().ToString());
    expanded.push_back(tensor.Unsqueeze(a));
  }
  return Cat(expanded, a);
}

namespace {

void CheckIndex(const TensorBase& index, const char* op) {
  CheckDefined(index, op);
  KINDLING_CHECK(index.dtype() == DType::kI64 || index.dtype() == DType::kI32,
                 "%s: index must be i64 or i32, got %s%s", op,
                 std::string(DTypeName(index.dtype())),
                 index.shape().ToString());
}

// Aborts unless every entry of `index` lies in [0, size).
void CheckIndexRange(const TensorBase& index, int64_t size, const char* op) {
  if (index.numel() == 0) return;
  const TensorBase low = ReduceAll(ReduceOp::kMin, index).To(DType::kI64);
  const TensorBase high = ReduceAll(ReduceOp::kMax, index).To(DType::kI64);
  int64_t min_value = 0, max_value = 0;
  low.CopyToHost(&min_value);
  high.CopyToHost(&max_value);
  KINDLING_CHECK(min_value >= 0 && max_value < size,
                 "%s: index out of range [0, %d): found entries %d..%d", op,
                 size, min_value, max_value);
}

}  // namespace

TensorBase IndexSelect(const TensorBase& in, int axis,
                       const TensorBase& index) {
  CheckDefined(in, "index_select");
  CheckIndex(index, "index_select");
  CheckSameDevice(in, index, "index_select");
  KINDLING_CHECK(index.rank() == 1,
                 "index_select: index must be 1-D, got shape %s (input %s)",
                 index.shape().ToString(), in.shape().ToString());
  const int a = in.NormalizeAxis(axis, "index_select");
  CheckIndexRange(index, in.shape()[a], "index_select");
  Shape shape = in.shape();
  shape[a] = index.shape()[0];
  TensorBase result = TensorBase::Empty(shape, in.dtype(), in.device());
  if (result.numel() > 0) {
    GetBackend(in.device()).IndexSelect(result, in, a, index);
  }
  return result;
}

TensorBase Gather(const TensorBase& in, int axis, const TensorBase& index) {
  CheckDefined(in, "gather");
  CheckIndex(index, "gather");
  CheckSameDevice(in, index, "gather");
  const int a = in.NormalizeAxis(axis, "gather");
  bool compatible = index.rank() == in.rank();
  for (int i = 0; compatible && i < in.rank(); ++i) {
    compatible = i == a || index.shape()[i] == in.shape()[i];
  }
  KINDLING_CHECK(compatible,
                 "gather: index shape %s and input shape %s differ outside "
                 "axis %d",
                 index.shape().ToString(), in.shape().ToString(), a);
  CheckIndexRange(index, in.shape()[a], "gather");
  TensorBase result = TensorBase::Empty(index.shape(), in.dtype(), in.device());
  if (result.numel() > 0) GetBackend(in.device()).Gather(result, in, a, index);
  return result;
}

TensorBase OneHot(const TensorBase& index, int64_t num_classes, DType dtype) {
  CheckIndex(index, "one_hot");
  KINDLING_CHECK(num_classes > 0, "one_hot: num_classes %d must be positive",
                 num_classes);
  CheckIndexRange(index, num_classes, "one_hot");
  const TensorBase classes = Arange(0, static_cast<double>(num_classes), 1,
                                    index.dtype(), index.device());
  return Binary(BinaryOp::kEqual, index.Unsqueeze(index.rank()), classes)
      .To(dtype);
}

}  // namespace kindling::ops
