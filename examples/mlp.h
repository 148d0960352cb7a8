// Mlp: the model from the README, a user-written module.
#ifndef KINDLING_EXAMPLES_MLP_H_
#define KINDLING_EXAMPLES_MLP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kindling/module/annotations.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/tensor.h"

namespace examples {

struct KINDLING_MODULE Mlp {
  kindling::nn::Linear fc1;
  kindling::nn::Linear fc2;
  std::vector<kindling::nn::Linear> hidden;
  std::optional<kindling::nn::LayerNorm> norm;
  int64_t num_classes;              // constant: kept, copied, not saved
  KINDLING_SKIP std::string label;  // ignored by the generator

  // Forward(): [batch, d_input] -> [batch, num_classes] logits.
  kindling::Tensor<2> Forward(const kindling::Tensor<2>& input) const {
    kindling::Tensor<2> x = fc1.ForwardRelu(input);
    for (const kindling::nn::Linear& layer : hidden) {
      x = layer.ForwardRelu(x);
    }
    if (norm.has_value()) x = norm->Forward(x);
    return fc2.Forward(x);
  }
};

// MlpConfig builds a lazy Mlp: nothing is allocated until a weight is read.
struct MlpConfig {
  int64_t d_input = 784;
  int64_t d_hidden = 256;
  int64_t hidden_layers = 2;
  int64_t num_classes = 10;

  Mlp Init(const kindling::Device& device = kindling::Device::Cpu()) const {
    Mlp mlp{kindling::nn::LinearConfig{d_input, d_hidden}.Init(device),
            kindling::nn::LinearConfig{d_hidden, num_classes}.Init(device),
            {},
            kindling::nn::LayerNormConfig{d_hidden}.Init(device),
            num_classes,
            "mlp"};
    for (int64_t i = 0; i < hidden_layers; ++i) {
      mlp.hidden.push_back(
          kindling::nn::LinearConfig{d_hidden, d_hidden}.Init(device));
    }
    return mlp;
  }
};

}  // namespace examples

#endif  // KINDLING_EXAMPLES_MLP_H_
