// Dropout: zeroes each element with probability `prob` while training and
// scales the survivors by 1 / (1 - prob); the identity at inference.
//
// The mask comes from the PhiloxGenerator the caller passes, so a training
// run is reproducible from its seed (and resumable from the generator's
// state). Training mode is one pass (ops::Dropout, random_ops.h): the mask is
// never materialized, and is recomputable from (seed, offset) for backward.
// No parameters: a plain struct.
//
//   kindling::nn::Dropout dropout{0.1};
//   kindling::PhiloxGenerator generator(/*seed=*/1);
//   Tensor<2> y = dropout.Forward(x, ForwardMode::kTraining, generator);
#ifndef KINDLING_NN_DROPOUT_H_
#define KINDLING_NN_DROPOUT_H_

#include <cstdint>
#include <ostream>

#include "kindling/core/check.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct Dropout {
  double prob = 0.5;

  // Forward() in training mode draws ceil(numel / 4) Philox blocks from
  // `generator` (none at inference or with prob 0).
  template <int D>
  Tensor<D> Forward(const Tensor<D>& input, ForwardMode mode,
                    PhiloxGenerator& generator) const {
    KINDLING_CHECK(prob >= 0 && prob < 1, "Dropout: prob %g not in [0, 1)",
                   prob);
    if (mode == ForwardMode::kInference || prob == 0) return input;
    const uint64_t offset = ops::ReserveDropoutBlocks(generator, input.base());
    return Tensor<D>(
        ops::Dropout(input.base(), prob, generator.seed(), offset));
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
