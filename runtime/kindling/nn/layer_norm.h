// LayerNorm: normalizes the last dimension to zero mean and unit variance,
// then scales by gamma and shifts by beta (PyTorch's weight and bias).
//
//   auto norm = kindling::nn::LayerNormConfig{768}.Init();
//   Tensor<3> y = norm.Forward(x);  // x: [..., 768]
#ifndef KINDLING_NN_LAYER_NORM_H_
#define KINDLING_NN_LAYER_NORM_H_

#include <cstdint>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/normalize.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE LayerNorm {
  Param<Tensor<1>> gamma;  // [d_model], ones
  Param<Tensor<1>> beta;   // [d_model], zeros
  double epsilon = 1e-5;

  // Forward(): [..., d_model] -> same shape. Uses the biased variance, as
  // PyTorch does. Recorded as one autodiff node with a fused backward
  // (normalize.h).
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    return Tensor<D>(
        LayerNormOp(input.base(), gamma->base(), beta->base(), epsilon));
  }
};

struct LayerNormConfig {
  int64_t d_model;
  double epsilon = 1e-5;

  LayerNorm Init(const Device& device = Device::Cpu()) const {
    return LayerNorm{Initializer::Ones().Init<1>({d_model}, device),
                     Initializer::Zeros().Init<1>({d_model}, device), epsilon};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_LAYER_NORM_H_
