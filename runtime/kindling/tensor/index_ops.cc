#include "kindling/tensor/index_ops.h"

#include <cstdint>
#include <string>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/creation_ops.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/op_checks.h"
#include "kindling/tensor/reduce_ops.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckSameDevice;
using internal::ComputeDType;

namespace {

// ScatterAddInto() is zeros of `shape` with `src` added at `index` along
// `axis` (Backend::ScatterAdd), in src's dtype: the gradient of a gather.
TensorBase ScatterAddInto(const Shape& shape, int axis, const TensorBase& index,
                          const TensorBase& src) {
  const DType compute = ComputeDType(src.dtype());
  TensorBase full = autodiff::Zeros(shape, compute, src.device());
  if (src.numel() > 0) {
    GetBackend(src.device()).ScatterAdd(full, axis, index, src.To(compute));
  }
  return full.To(src.dtype());
}

}  // namespace

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
  if (!autodiff::ShouldRecord(tensors)) return result;
  // Each input's gradient is its range of the result's.
  std::vector<int64_t> lengths;
  std::vector<bool> needs;
  for (const TensorBase& tensor : tensors) {
    lengths.push_back(tensor.shape()[a]);
    needs.push_back(tensor.is_require_grad());
  }
  return autodiff::Record("cat", tensors, std::move(result),
                          [a, lengths = std::move(lengths),
                           needs = std::move(needs)](const TensorBase& grad) {
                            GradList grads(lengths.size());
                            int64_t begin = 0;
                            for (size_t i = 0; i < lengths.size(); ++i) {
                              if (needs[i])
                                grads[i] = grad.Narrow(a, begin, lengths[i]);
                              begin += lengths[i];
                            }
                            return grads;
                          });
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

// Aborts (or, on an asynchronous device, reports at the next
// synchronization) unless every entry of `index` lies in [0, size). The
// backend checks, so the indices are never copied to the host here.
void CheckIndexRange(const TensorBase& index, int64_t size, const char* op) {
  if (index.numel() == 0) return;
  GetBackend(index.device()).CheckIndices(index, size, op);
}

// CheckPickRange() is CheckIndexRange() before an IndexSelect or Gather
// writing `picked` elements, skipped where the backend's kernels check the
// indices themselves (they run, and so check, only when picked > 0).
void CheckPickRange(const TensorBase& index, int64_t size, int64_t picked,
                    const char* op) {
  if (picked > 0 && GetBackend(index.device()).IndexKernelsCheckRange()) {
    return;
  }
  CheckIndexRange(index, size, op);
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
  Shape shape = in.shape();
  shape[a] = index.shape()[0];
  CheckPickRange(index, in.shape()[a], shape.num_elements(), "index_select");
  TensorBase result = TensorBase::Empty(shape, in.dtype(), in.device());
  if (result.numel() > 0) {
    GetBackend(in.device()).IndexSelect(result, in, a, index);
  }
  if (!autodiff::ShouldRecord(in)) return result;
  // Rows picked several times sum their gradients: a scatter-add with the
  // index broadcast over the other axes.
  return autodiff::Record(
      "index_select", {in}, std::move(result),
      [index = SavedTensor(index), input_shape = in.shape(),
       a](const TensorBase& grad) {
        Shape index_shape;
        for (int axis = 0; axis < grad.rank(); ++axis) {
          index_shape.push_back(axis == a ? index.get().numel() : 1);
        }
        const TensorBase broadcast =
            index.get().Reshape(index_shape).Expand(grad.shape());
        return GradList{ScatterAddInto(input_shape, a, broadcast, grad)};
      });
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
  CheckPickRange(index, in.shape()[a], index.numel(), "gather");
  TensorBase result = TensorBase::Empty(index.shape(), in.dtype(), in.device());
  if (result.numel() > 0) GetBackend(in.device()).Gather(result, in, a, index);
  if (!autodiff::ShouldRecord(in)) return result;
  return autodiff::Record(
      "gather", {in}, std::move(result),
      [index = SavedTensor(index), input_shape = in.shape(),
       a](const TensorBase& grad) {
        return GradList{ScatterAddInto(input_shape, a, index, grad)};
      });
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
