// The training FLOPs of the example models (forward + backward of one batch),
// from their layers' shapes, for the FLOP-limit ratios of benches/ (see
// kindling/nn/flop_count.h for what is counted).
#ifndef KINDLING_EXAMPLES_MODEL_FLOPS_H_
#define KINDLING_EXAMPLES_MODEL_FLOPS_H_

#include <cstdint>

#include "examples/char_lm.h"
#include "examples/cnn.h"
#include "examples/mlp.h"
#include "kindling/nn/flop_count.h"

namespace examples {

// TrainingFlops(mlp, batch): `batch` rows through every Linear; the first
// layer's input (the images) needs no gradient.
inline kindling::nn::Flops TrainingFlops(const Mlp& model, int64_t batch) {
  using kindling::nn::InputGradient;
  kindling::nn::Flops flops =
      LinearFlops(model.fc1, batch, InputGradient::kNotNeeded);
  for (const kindling::nn::Linear& layer : model.hidden) {
    flops += LinearFlops(layer, batch, InputGradient::kNeeded);
  }
  flops += LinearFlops(model.fc2, batch, InputGradient::kNeeded);
  return flops;
}

// TrainingFlops(cnn, batch): `batch` 28 x 28 images; each pool halves the
// side.
inline kindling::nn::Flops TrainingFlops(const Cnn& model, int64_t batch) {
  using kindling::nn::InputGradient;
  kindling::nn::Flops flops =
      Conv2dFlops(model.conv1, batch, {28, 28}, InputGradient::kNotNeeded);
  flops += Conv2dFlops(model.conv2, batch, {14, 14}, InputGradient::kNeeded);
  flops += LinearFlops(model.fc1, batch, InputGradient::kNeeded);
  flops += LinearFlops(model.fc2, batch, InputGradient::kNeeded);
  return flops;
}

// TrainingFlops(char_lm, batch, length): the blocks (causal) and the output
// projection onto the tied token embedding; the embeddings' gathers are not
// products.
inline kindling::nn::Flops TrainingFlops(const CharLm& model, int64_t batch,
                                         int64_t length) {
  using kindling::nn::InputGradient;
  kindling::nn::Flops flops;
  for (const kindling::nn::TransformerEncoderLayer& block : model.blocks) {
    flops += TransformerEncoderLayerFlops(block, batch, length,
                                          /*causal=*/true);
  }
  const kindling::Shape tokens = model.tokens.weight.lazy_shape();
  flops += kindling::nn::MatmulFlops(batch * length, tokens[1], tokens[0],
                                     InputGradient::kNeeded);
  return flops;
}

}  // namespace examples

#endif  // KINDLING_EXAMPLES_MODEL_FLOPS_H_
