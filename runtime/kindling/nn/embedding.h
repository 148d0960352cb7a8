// Embedding: a lookup table from token ids to vectors.
//
//   auto embed = kindling::nn::EmbeddingConfig{50257, 768}.Init();
//   Tensor<3> vectors = embed.Forward(ids);  // ids: Int [batch, seq]
#ifndef KINDLING_NN_EMBEDDING_H_
#define KINDLING_NN_EMBEDDING_H_

#include <cstdint>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE Embedding {
  Param<Tensor<2>> weight;  // [num_embeddings, d_model]

  // Forward(): Int ids [batch, seq] -> [batch, seq, d_model]. Aborts on an id
  // outside [0, num_embeddings).
  Tensor<3> Forward(const Tensor<2, Int>& ids) const {
    const Shape ids_shape = ids.shape();
    const Tensor<2> rows = index_select(*weight, 0, ids.flatten());
    return rows.reshape<3>({ids_shape[0], ids_shape[1], weight->dim(1)});
  }
};

struct EmbeddingConfig {
  int64_t num_embeddings;
  int64_t d_model;
  Initializer initializer = Initializer::Normal(0.0, 1.0);

  Embedding Init(const Device& device = Device::Cpu()) const {
    return Embedding{initializer.Init<2>({num_embeddings, d_model}, device)};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_EMBEDDING_H_
