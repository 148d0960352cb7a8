// Regressor: the small model of examples/custom_loop.cc and the README's tour.
#ifndef KINDLING_EXAMPLES_REGRESSOR_H_
#define KINDLING_EXAMPLES_REGRESSOR_H_

#include <cstdint>

#include "kindling/module/annotations.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/tensor.h"

namespace examples {

// A model is a plain struct; KINDLING_MODULE makes kindling-gen write its
// visitor, mapper and checkpoint record (regressor.kindling.h).
struct KINDLING_MODULE Regressor {
  kindling::nn::Linear hidden;
  kindling::nn::Linear output;

  // Forward(): [batch, inputs] -> [batch, 1].
  kindling::Tensor<2> Forward(const kindling::Tensor<2>& input) const {
    return output.Forward(hidden.Forward(input).relu());
  }
};

// RegressorConfig builds a lazy Regressor: nothing is allocated until a
// weight is read.
struct RegressorConfig {
  int64_t inputs = 2;
  int64_t hidden = 32;

  Regressor Init() const {
    return {kindling::nn::LinearConfig{inputs, hidden}.Init(),
            kindling::nn::LinearConfig{hidden, 1}.Init()};
  }
};

}  // namespace examples

#endif  // KINDLING_EXAMPLES_REGRESSOR_H_
