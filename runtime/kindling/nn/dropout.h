// Dropout: zeroes each element with probability `prob` while training and
// scales the survivors by 1 / (1 - prob); the identity at inference.
//
// The random mask comes from a Generator the caller passes, so a training run
// is reproducible from its seed. No parameters: a plain struct.
//
//   kindling::nn::Dropout dropout{0.1};
//   Tensor<2> y = dropout.Forward(x, generator, /*training=*/true);
#ifndef KINDLING_NN_DROPOUT_H_
#define KINDLING_NN_DROPOUT_H_

#include <ostream>

#include "kindling/core/check.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct Dropout {
  double prob = 0.5;

  template <int D>
  Tensor<D> Forward(const Tensor<D>& input, Generator& generator,
                    bool training) const {
    KINDLING_CHECK(prob >= 0 && prob < 1, "Dropout: prob %g not in [0, 1)",
                   prob);
    if (!training || prob == 0) return input;
    const Tensor<D> uniform = Tensor<D>::RandomUniform(
        input.shape(), generator, 0, 1, input.device(), input.dtype());
    const Tensor<D> zeros =
        Tensor<D>::Zeros(input.shape(), input.device(), input.dtype());
    return where(uniform.greater_equal(prob), input * (1.0 / (1.0 - prob)),
                 zeros);
  }

  friend std::ostream& operator<<(std::ostream& os, const Dropout& dropout) {
    return os << "Dropout(prob=" << dropout.prob << ")";
  }
};

// DropoutConfig: the config-then-Init() shape of the other layers.
struct DropoutConfig {
  double prob = 0.5;

  Dropout Init(const Device& = Device::Cpu()) const { return Dropout{prob}; }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_DROPOUT_H_
