// Reductions on TensorBase: along one axis, over the whole tensor, and
// softmax (a normalization along one axis). See ops.h for the conventions all
// ops share.
#ifndef KINDLING_TENSOR_REDUCE_OPS_H_
#define KINDLING_TENSOR_REDUCE_OPS_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Reduce() reduces `axis`, keeping it with size 1. kArgMax/kArgMin give i64.
TensorBase Reduce(ReduceOp op, const TensorBase& in, int axis);
// ReduceAll() reduces every element to a rank-0 tensor.
TensorBase ReduceAll(ReduceOp op, const TensorBase& in);
// Softmax() along `axis`: exp(x - max) / sum, or its log when `log`.
TensorBase Softmax(const TensorBase& in, int axis, bool log);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_REDUCE_OPS_H_
