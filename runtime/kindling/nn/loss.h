// Fused losses: cross-entropy from logits, mean squared error and binary
// cross-entropy with logits, each recorded as ONE autodiff node.
//
// Composing a loss from ops (log_softmax, gather, mean, ...) records a node
// per op and keeps every intermediate alive until backward. The fused forms
// save one tensor and compute the input gradient in closed form, e.g. for
// cross-entropy d logits = (softmax - target distribution) / batch.
//
//   Tensor<2> logits = model.Forward(images);        // [B, C]
//   Tensor<0> loss = nn::CrossEntropy(logits, labels);  // labels: Int [B]
//   Gradients grads = Backward(loss);
//
// Every loss here uses the mean reduction and returns a rank-0 tensor of the
// input's dtype. Shapes and label ranges are programming errors: they abort
// naming the shapes (or the label) involved.
#ifndef KINDLING_NN_LOSS_H_
#define KINDLING_NN_LOSS_H_

#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// CrossEntropy(): the mean over the batch of -sum_c q_c log softmax(logits)_c,
// where q puts 1 - label_smoothing on the label and spreads label_smoothing
// evenly over all C classes (PyTorch's label_smoothing), i.e.
//   (1 - eps) * nll + eps * mean_c(-log p_c).
// logits: [B, C] float; labels: Int [B] (i64 or i32), each in [0, C).
// REQUIRES: 0 <= label_smoothing <= 1 (checked).
Tensor<0> CrossEntropy(const Tensor<2>& logits, const Tensor<1, Int>& labels,
                       double label_smoothing = 0.0);

namespace internal {
TensorBase MseLoss(const TensorBase& prediction, const TensorBase& target);
TensorBase BinaryCrossEntropyWithLogits(const TensorBase& logits,
                                        const TensorBase& targets);
}  // namespace internal

// MseLoss(): mean((prediction - target)^2). Both of one shape and dtype;
// gradients flow to both.
template <int D>
Tensor<0> MseLoss(const Tensor<D>& prediction, const Tensor<D>& target) {
  return Tensor<0>(internal::MseLoss(prediction.base(), target.base()));
}

// BinaryCrossEntropyWithLogits(): the mean of
//   -(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))),
// computed as max(x, 0) - x t + log(1 + exp(-|x|)), which neither overflows
// nor takes the log of 0 for large |x|. targets t are probabilities in
// [0, 1] of the logits' shape and dtype; gradients flow to both.
template <int D>
Tensor<0> BinaryCrossEntropyWithLogits(const Tensor<D>& logits,
                                       const Tensor<D>& targets) {
  return Tensor<0>(
      internal::BinaryCrossEntropyWithLogits(logits.base(), targets.base()));
}

}  // namespace kindling::nn

#endif  // KINDLING_NN_LOSS_H_
