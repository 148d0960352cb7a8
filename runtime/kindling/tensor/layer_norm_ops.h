// Layer normalization over the last axis, as one backend kernel each way
// (Backend::LayerNorm, LayerNormBackward). See ops.h for the conventions all
// ops share.
//
// These are kernels, not differentiable ops: they record no autodiff node
// and their results never require grad. nn::LayerNormOp (runtime/kindling/
// nn/normalize.h) records one node whose backward calls LayerNormBackward()
// with the statistics the forward returned.
//
//   ops::LayerNormResult y = ops::LayerNorm(x, gamma, beta, 1e-5);
//   ops::LayerNormGradients g = ops::LayerNormBackward(
//       dy, x, y.mean, y.rstd, gamma, {.input = true, .gamma = true});
#ifndef KINDLING_TENSOR_LAYER_NORM_OPS_H_
#define KINDLING_TENSOR_LAYER_NORM_OPS_H_

#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// LayerNormResult: the normalized output (input's shape and dtype) and the
// per-row statistics the backward reads: mean and rstd = 1 / sqrt(biased
// variance + epsilon), [R] for R = input.numel() / D rows, in the compute
// dtype (f32 for f16, bf16 and f32 inputs, f64 for f64).
struct LayerNormResult {
  TensorBase output;
  TensorBase mean;
  TensorBase rstd;
};

// LayerNorm(): normalizes the last axis of `input` [..., D] (any strided
// view, floating dtype) to zero mean and unit biased variance, then scales
// by gamma [D] and shifts by beta [D] (either may be undefined: ones,
// zeros). gamma and beta must have input's dtype and device. Aborts naming
// the op and the shapes otherwise. An input with no elements gives an empty
// output (and, with D = 0, NaN statistics: the mean of nothing).
LayerNormResult LayerNorm(const TensorBase& input, const TensorBase& gamma,
                          const TensorBase& beta, double epsilon);

// LayerNormNeeds: which gradients LayerNormBackward() computes.
struct LayerNormNeeds {
  bool input = false;
  bool gamma = false;
  bool beta = false;
};

// LayerNormGradients: what LayerNormBackward() computed; undefined where
// not asked.
struct LayerNormGradients {
  TensorBase input;  // input's shape
  TensorBase gamma;  // [D]
  TensorBase beta;   // [D]
};

// LayerNormBackward(): the gradients of LayerNorm(input, gamma, beta, ...)
// for its output gradient `grad` (input's shape and dtype), given the mean
// and rstd it returned. `gamma` is read for the input's gradient (undefined:
// ones). Rows of an empty input give zero gamma and beta gradients.
LayerNormGradients LayerNormBackward(const TensorBase& grad,
                                     const TensorBase& input,
                                     const TensorBase& mean,
                                     const TensorBase& rstd,
                                     const TensorBase& gamma,
                                     const LayerNormNeeds& needs);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_LAYER_NORM_OPS_H_
