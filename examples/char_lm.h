// CharLm: a small GPT-style language model over bytes (examples/char_lm.cc).
//
// Token and learned position embeddings, pre-norm causal transformer blocks,
// a final LayerNorm, and an output projection tied to the token embedding:
// the logits are h E^T, so the embedding is one Param, stepped once.
#ifndef KINDLING_EXAMPLES_CHAR_LM_H_
#define KINDLING_EXAMPLES_CHAR_LM_H_

#include <cstdint>
#include <vector>

#include "kindling/module/annotations.h"
#include "kindling/nn/attention.h"
#include "kindling/nn/embedding.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/positional.h"
#include "kindling/nn/transformer.h"
#include "kindling/tensor/tensor.h"

namespace examples {

struct KINDLING_MODULE CharLm {
  kindling::nn::Embedding tokens;               // [256, d_model]
  kindling::nn::PositionalEmbedding positions;  // [context, d]
  std::vector<kindling::nn::TransformerEncoderLayer> blocks;
  kindling::nn::LayerNorm norm;

  // Forward(): byte ids [B, T] -> logits [B, T, 256]. T may not exceed the
  // position table (an error naming both).
  kindling::Tensor<3> Forward(
      const kindling::Tensor<2, kindling::Int>& ids,
      const kindling::nn::AttentionOptions& options) const {
    kindling::Tensor<3> h =
        tokens.Forward(ids) + positions.Forward(ids.dim(1)).unsqueeze(0);
    kindling::nn::AttentionOptions causal = options;
    causal.causal = true;
    for (const kindling::nn::TransformerEncoderLayer& block : blocks) {
      h = block.Forward(h, causal);
    }
    return matmul(norm.Forward(h), tokens.weight->t());
  }
};

struct CharLmConfig {
  int64_t layers = 4;
  int64_t d_model = 128;
  int64_t heads = 4;
  int64_t context = 128;
  double dropout = 0;

  static constexpr int64_t kVocabulary = 256;  // bytes

  CharLm Init(const kindling::Device& device = kindling::Device::Cpu()) const {
    CharLm model{
        kindling::nn::EmbeddingConfig{kVocabulary, d_model,
                                      kindling::Initializer::Normal(0.0, 0.02)}
            .Init(device),
        kindling::nn::PositionalEmbeddingConfig{context, d_model}.Init(device),
        {},
        kindling::nn::LayerNormConfig{d_model}.Init(device)};
    for (int64_t i = 0; i < layers; ++i) {
      model.blocks.push_back(kindling::nn::TransformerEncoderLayerConfig{
          d_model, heads, 4 * d_model, dropout}
                                 .Init(device));
    }
    return model;
  }
};

}  // namespace examples

#endif  // KINDLING_EXAMPLES_CHAR_LM_H_
