// Linear algebra on TensorBase: batched matrix products. See ops.h for the
// conventions all ops share.
#ifndef KINDLING_TENSOR_LINALG_OPS_H_
#define KINDLING_TENSOR_LINALG_OPS_H_

#include "kindling/tensor/backend.h"
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
// 0.92 ms, the product alone 0.80-0.85 ms. Where the backend has a fused
// kernel (Backend::MatmulBias: the CPU's f32 and f64 products that are one
// GEMM), each thread adds the bias to its own slab of the product right
// after computing it. weight must be a matrix and bias a vector of its N
// columns.
//
// With ProductActivation::kRelu the op is Relu(Matmul(input, weight) +
// bias) (a Linear layer and its ReLU, nn::Linear::ForwardRelu): the same
// values, and the same gradients except where the sum is NaN (relu's own
// gradient passes the incoming one there; this op's, which reads the ReLU's
// output, gives 0). It saves no pre-activation tensor, and where the
// backend fuses it the ReLU costs no pass of its own.
TensorBase MatmulBias(const TensorBase& input, const TensorBase& weight,
                      const TensorBase& bias,
                      ProductActivation activation = ProductActivation::kNone);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_LINALG_OPS_H_
