// The loss and the validation figure of examples/char_lm.cc, shared with
// benches/char_lm_bench.cc.
#ifndef KINDLING_EXAMPLES_CHAR_LM_LOSS_H_
#define KINDLING_EXAMPLES_CHAR_LM_LOSS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "examples/char_lm.kindling.h"
#include "examples/text_corpus.h"
#include "kindling/nn/loss.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"

namespace examples {

// CharLmLoss() is the mean cross-entropy of the next byte at every position
// of the batch's windows.
inline kindling::Tensor<0> CharLmLoss(
    const CharLm& model, const TextWindows::Batch& batch,
    const kindling::nn::AttentionOptions& options) {
  const kindling::Tensor<3> logits = model.Forward(batch.inputs, options);
  return kindling::nn::CrossEntropy(
      logits.reshape<2>(
          {batch.size() * batch.inputs.dim(1), CharLmConfig::kVocabulary}),
      batch.targets.flatten());
}

// ValidationBitsPerByte() is the mean loss over the first `windows` windows
// of `validation` (all of them when 0), in bits, in inference mode without
// a graph.
inline double ValidationBitsPerByte(const CharLm& model,
                                    const TextWindows& validation,
                                    int64_t windows) {
  const int64_t count =
      windows > 0 ? std::min(windows, validation.size()) : validation.size();
  kindling::NoGradGuard no_grad;
  double total = 0;
  constexpr int64_t kBatch = 32;
  for (int64_t begin = 0; begin < count; begin += kBatch) {
    std::vector<int64_t> indices;
    for (int64_t i = begin; i < std::min(count, begin + kBatch); ++i) {
      indices.push_back(i);
    }
    const TextWindows::Batch batch = validation.Gather(indices);
    total += CharLmLoss(model, batch, {}).item<float>() * batch.size();
  }
  return count > 0 ? total / count / std::log(2.0) : 0;
}

}  // namespace examples

#endif  // KINDLING_EXAMPLES_CHAR_LM_LOSS_H_
