// Models for benches/module_bench, processed by kindling-gen.
#ifndef KINDLING_BENCHES_BENCH_MODELS_H_
#define KINDLING_BENCHES_BENCH_MODELS_H_

#include <vector>

#include "kindling/module/annotations.h"
#include "kindling/nn/embedding.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"

namespace kindling::bench {

// Deep: a stack of Linear layers (100 in the visit/map benchmark, 100 of
// 1732 x 1732 for the 300M-parameter lazy-init benchmark).
struct KINDLING_MODULE Deep {
  std::vector<nn::Linear> layers;
};

// BertBase: the parameters of Hugging Face's bert-base-uncased (110M) under
// Kindling's layer names, for load_bench's PyTorch-layout checkpoint. Its
// forward there runs every Linear and LayerNorm in order; Kindling has no
// attention layer, so the query/key/value outputs are summed, not attended.
struct KINDLING_MODULE BertLayer {
  nn::Linear query;
  nn::Linear key;
  nn::Linear value;
  nn::Linear attention_output;
  nn::LayerNorm attention_norm;
  nn::Linear intermediate;
  nn::Linear output;
  nn::LayerNorm output_norm;
};

struct KINDLING_MODULE BertBase {
  nn::Embedding word_embeddings;
  nn::Embedding position_embeddings;
  nn::Embedding token_type_embeddings;
  nn::LayerNorm embeddings_norm;
  std::vector<BertLayer> layers;
  nn::Linear pooler;
};

}  // namespace kindling::bench

#endif  // KINDLING_BENCHES_BENCH_MODELS_H_
