// Activations as layers: Relu, Gelu, Sigmoid, Tanh. They hold no parameters,
// so they are plain structs a model keeps as constants.
//
//   struct KINDLING_MODULE Mlp {
//     kindling::nn::Linear fc1;
//     kindling::nn::Gelu activation;
//     ...
//   };
#ifndef KINDLING_NN_ACTIVATION_H_
#define KINDLING_NN_ACTIVATION_H_

#include <ostream>

#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct Relu {
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    return input.relu();
  }
  friend std::ostream& operator<<(std::ostream& os, const Relu&) {
    return os << "Relu";
  }
};

// Gelu: the exact (erf) form, PyTorch's default.
struct Gelu {
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    return input.gelu();
  }
  friend std::ostream& operator<<(std::ostream& os, const Gelu&) {
    return os << "Gelu";
  }
};

struct Sigmoid {
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    return input.sigmoid();
  }
  friend std::ostream& operator<<(std::ostream& os, const Sigmoid&) {
    return os << "Sigmoid";
  }
};

struct Tanh {
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input) const {
    return input.tanh();
  }
  friend std::ostream& operator<<(std::ostream& os, const Tanh&) {
    return os << "Tanh";
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_ACTIVATION_H_
