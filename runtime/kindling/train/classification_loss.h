// CrossEntropyLoss() and CountCorrect(): the loss and the metric of the
// classification loop (trainer.h).
//
//   Tensor<0> loss = CrossEntropyLoss(logits, labels);  // mean over the batch
//
// Interim: this composes log_softmax and gather, whose gradients autodiff
// already has. The fused nn cross-entropy (runtime/kindling/nn/loss.h, with
// label smoothing) replaces it once it lands; callers keep this signature.
#ifndef KINDLING_TRAIN_CLASSIFICATION_LOSS_H_
#define KINDLING_TRAIN_CLASSIFICATION_LOSS_H_

#include <cstdint>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/tensor.h"

namespace kindling::train {

// CrossEntropyLoss(): mean over the batch of -log softmax(logits)[label].
// logits [B, C] float, labels [B] i64 in [0, C).
inline Tensor<0> CrossEntropyLoss(const Tensor<2>& logits,
                                  const Tensor<1, Int>& labels) {
  KINDLING_CHECK(logits.dim(0) == labels.dim(0),
                 "CrossEntropyLoss: %d logits rows but %d labels",
                 logits.dim(0), labels.dim(0));
  const Tensor<2, Int> index = labels.reshape<2>({labels.dim(0), 1});
  return gather(logits.log_softmax(1), 1, index).mean().neg();
}

// CountCorrect() is how many rows' argmax equals their label.
inline int64_t CountCorrect(const Tensor<2>& logits,
                            const Tensor<1, Int>& labels) {
  const std::vector<int64_t> predicted = logits.argmax(1).to_data<int64_t>();
  const std::vector<int64_t> truth = labels.to_data<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i];
  return correct;
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_CLASSIFICATION_LOSS_H_
