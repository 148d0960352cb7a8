// Linear algebra on TensorBase: batched matrix products. See ops.h for the
// conventions all ops share.
#ifndef KINDLING_TENSOR_LINALG_OPS_H_
#define KINDLING_TENSOR_LINALG_OPS_H_

#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Matmul(): [.., M, K] x [.., K, N] -> [.., M, N], batch dims broadcast.
TensorBase Matmul(const TensorBase& lhs, const TensorBase& rhs);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_LINALG_OPS_H_
