// The fused normalization ops under LayerNorm and BatchNorm (training):
//
//   y = (x - mean) * rstd * gamma + beta,   rstd = 1 / sqrt(variance + eps)
//
// with the mean and biased variance taken over some axes, recorded as ONE
// autodiff node whose backward gives dx, dgamma and dbeta in closed form:
//
//   xhat = (x - mean) * rstd,  g = dy * gamma,
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum(dy * xhat),  dbeta = sum(dy)
//
// (means over the normalized axes, sums over the others). Composing the same
// forward from ops would record about ten nodes and keep each intermediate
// alive until backward.
//
// LayerNorm runs as one backend kernel each way (ops::LayerNorm and
// LayerNormBackward, kindling/tensor/layer_norm_ops.h); its node saves the
// input, gamma and the per-row mean and rstd. BatchNorm composes backend ops
// (its statistics run down the batch axis) and saves xhat and rstd.
#ifndef KINDLING_NN_NORMALIZE_H_
#define KINDLING_NN_NORMALIZE_H_

#include "kindling/tensor/tensor_base.h"

namespace kindling::nn {

// LayerNormOp(): normalizes the last axis of `input` [..., D]; gamma and
// beta are [D] of input's dtype and device. Returns input's shape. f16 and
// bf16 inputs are computed in f32.
TensorBase LayerNormOp(const TensorBase& input, const TensorBase& gamma,
                       const TensorBase& beta, double epsilon);

// BatchStatistics: a batch's per-channel mean and biased variance, [C],
// detached (no gradient flows through them).
struct BatchStatistics {
  TensorBase mean;
  TensorBase variance;
};

// BatchNormTrainOp(): normalizes each channel (axis 1) of `input`
// [N, C, ...] with the statistics of this batch; gamma and beta are [C].
// `statistics` receives the batch statistics, detached, for the running
// averages.
TensorBase BatchNormTrainOp(const TensorBase& input, const TensorBase& gamma,
                            const TensorBase& beta, double epsilon,
                            BatchStatistics* statistics);

}  // namespace kindling::nn

#endif  // KINDLING_NN_NORMALIZE_H_
