// Linear: y = x W + b, the fully connected layer.
//
// The weight is [d_input, d_output] (Burn's layout: the forward pass is one
// row-major GEMM with no transpose). PyTorch stores nn.Linear.weight as
// [out, in]; the checkpoint adapter transposes on the way in and out.
//
//   kindling::nn::Linear fc = kindling::nn::LinearConfig{784, 128}.Init();
//   kindling::Tensor<2> y = fc.Forward(x);  // x: [batch, 784] -> [batch, 128]
//
// Default initialization matches PyTorch's: Kaiming-uniform with gain
// 1/sqrt(3), i.e. U(-1/sqrt(d_input), 1/sqrt(d_input)) for weight and bias.
#ifndef KINDLING_NN_LINEAR_H_
#define KINDLING_NN_LINEAR_H_

#include <cmath>
#include <cstdint>
#include <optional>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE Linear {
  Param<Tensor<2>> weight;               // [d_input, d_output]
  std::optional<Param<Tensor<1>>> bias;  // [d_output]

  // Forward(): [..., d_input] -> [..., d_output].
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    if (bias.has_value()) return matmul_bias(input, *weight, **bias);
    return matmul(input, *weight);
  }

  // ForwardRelu(): Forward(input).relu() as one op where there is a bias
  // (matmul_bias_relu: on the CPU each thread adds the bias and applies the
  // ReLU to its slab of the product while it is in cache, and the backward
  // reads the output instead of a saved pre-activation). The same values and
  // gradients, except that the gradient through a NaN pre-activation is 0.
  template <int D>
  Tensor<D> ForwardRelu(const Tensor<D>& input) const {
    if (bias.has_value()) return matmul_bias_relu(input, *weight, **bias);
    return matmul(input, *weight).relu();
  }
};

struct LinearConfig {
  int64_t d_input;
  int64_t d_output;
  bool bias = true;
  Initializer initializer = Initializer::KaimingUniform(1.0 / std::sqrt(3.0));

  // Init() builds a lazy Linear on `device`: allocates nothing.
  Linear Init(const Device& device = Device::Cpu()) const {
    Linear linear{
        initializer.Init<2>({d_input, d_output}, device, d_input, d_output),
        std::nullopt};
    if (bias) {
      linear.bias = initializer.Init<1>({d_output}, device, d_input, d_output);
    }
    return linear;
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_LINEAR_H_
