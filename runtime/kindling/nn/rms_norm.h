// RMSNorm: scales the last dimension to unit root mean square, then by a
// learned weight (Zhang & Sennrich, 2019; torch.nn.RMSNorm's `weight`):
//
//   y = x / sqrt(mean(x^2 over the last dim) + epsilon) * weight
//
//   auto norm = kindling::nn::RmsNormConfig{512}.Init();
//   Tensor<3> y = norm.Forward(x);  // x: [..., 512]
#ifndef KINDLING_NN_RMS_NORM_H_
#define KINDLING_NN_RMS_NORM_H_

#include <cstdint>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE RmsNorm {
  Param<Tensor<1>> weight;  // [d_model], ones
  double epsilon = 1e-6;

  // Forward(): [..., d_model] -> same shape, composed of tensor ops (their
  // gradients give RMSNorm's). Aborts naming both sizes when the last
  // dimension is not d_model.
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    static_assert(D >= 1, "RmsNorm needs a feature dimension");
    KINDLING_CHECK(input.dim(D - 1) == weight->dim(0),
                   "RmsNorm: input %s has %d features, the layer %d",
                   input.shape().ToString(), input.dim(D - 1), weight->dim(0));
    const Tensor<D> mean_square = (input * input).mean_dim(D - 1);
    return input / (mean_square + epsilon).sqrt() * *weight;
  }
};

struct RmsNormConfig {
  int64_t d_model;
  double epsilon = 1e-6;

  RmsNorm Init(const Device& device = Device::Cpu()) const {
    return RmsNorm{Initializer::Ones().Init<1>({d_model}, device), epsilon};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_RMS_NORM_H_
