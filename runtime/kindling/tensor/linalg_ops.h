// Linear algebra on TensorBase: batched matrix products. See ops.h for the
// conventions all ops share.
#ifndef KINDLING_TENSOR_LINALG_OPS_H_
#define KINDLING_TENSOR_LINALG_OPS_H_

#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Matmul(): [.., M, K] x [.., K, N] -> [.., M, N], batch dims broadcast.
TensorBase Matmul(const TensorBase& lhs, const TensorBase& rhs);

// MatmulBias(): input [.., K] x weight [K, N] + bias [N] -> [.., N], the
// fully connected layer, as one op: Matmul(input, weight) + bias with the
// same values and gradients, bit for bit. The bias is added in place to the
// product while it is still in cache, where a separate add writes a second
// tensor: on a char-LM block's [4096, 128] x [128, 384] projection (2
// threads) the product and a separate add took 1.11-1.14 ms, this op
// 0.92 ms, the product alone 0.80-0.85 ms. weight must be a matrix and bias
// a vector of its N columns.
TensorBase MatmulBias(const TensorBase& input, const TensorBase& weight,
                      const TensorBase& bias);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_LINALG_OPS_H_
