#include "kindling/tensor/index_ops.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/creation_ops.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/op_checks.h"
#include "kindling/tensor/reduce_ops.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckSameDevice;

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
