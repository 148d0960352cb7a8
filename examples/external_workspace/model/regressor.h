// Regressor: the example's model, a two-layer perceptron with one output.
//
// A plain struct marked KINDLING_MODULE: kindling_module_library runs
// kindling-gen over this header and writes model/regressor.kindling.h, which
// gives it the module API (VisitParams, NumParams, SaveModule, LoadModule,
// ToDevice, ...). Include that generated header where the API is used.
#ifndef KINDLING_EXAMPLE_MODEL_REGRESSOR_H_
#define KINDLING_EXAMPLE_MODEL_REGRESSOR_H_

#include <cstdint>

#include "kindling/module/annotations.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/tensor.h"

namespace example {

struct KINDLING_MODULE Regressor {
  kindling::nn::Linear hidden;
  kindling::nn::Linear output;

  // Forward(): [batch, d_input] -> [batch, 1].
  kindling::Tensor<2> Forward(const kindling::Tensor<2>& input) const {
    return output.Forward(hidden.Forward(input).relu());
  }
};

// RegressorConfig::Init() builds a lazy Regressor: no weight is allocated
// until it is first read (or loaded from a checkpoint).
struct RegressorConfig {
  int64_t d_input = 8;
  int64_t d_hidden = 32;

  Regressor Init(
      const kindling::Device& device = kindling::Device::Cpu()) const {
    return Regressor{
        kindling::nn::LinearConfig{d_input, d_hidden}.Init(device),
        kindling::nn::LinearConfig{d_hidden, 1}.Init(device),
    };
  }
};

}  // namespace example

#endif  // KINDLING_EXAMPLE_MODEL_REGRESSOR_H_
