// Indexing ops on TensorBase: joining (cat, stack), selecting by index
// tensors (index_select, gather) and one_hot. Index tensors are i64 or i32
// with every entry in range (checked). See ops.h for the conventions all ops
// share.
#ifndef KINDLING_TENSOR_INDEX_OPS_H_
#define KINDLING_TENSOR_INDEX_OPS_H_

#include <cstdint>
#include <span>

#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

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

#endif  // KINDLING_TENSOR_INDEX_OPS_H_
