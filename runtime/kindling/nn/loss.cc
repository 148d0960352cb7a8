#include "kindling/nn/loss.h"

#include <cstdint>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"

namespace kindling::nn {
namespace {

void CheckFloat(const TensorBase& tensor, const char* loss, const char* what) {
  KINDLING_CHECK(IsFloatingDType(tensor.dtype()),
                 "%s: %s must be floating point, got %s%s", loss, what,
                 std::string(DTypeName(tensor.dtype())),
                 tensor.shape().ToString());
}

void CheckSameShapeAndDType(const TensorBase& a, const TensorBase& b,
                            const char* loss) {
  CheckFloat(a, loss, "the input");
  KINDLING_CHECK(a.shape() == b.shape() && a.dtype() == b.dtype(),
                 "%s: input %s%s and target %s%s differ", loss,
                 std::string(DTypeName(a.dtype())), a.shape().ToString(),
                 std::string(DTypeName(b.dtype())), b.shape().ToString());
}

TensorBase Scale(const TensorBase& tensor, double factor) {
  return ops::BinaryScalar(BinaryOp::kMul, tensor, factor);
}

// --- Cross-entropy
// -------------------------------------------------------------

// TargetDistribution() is q [B, C]: 1 - eps + eps / C at each label, eps / C
// elsewhere.
TensorBase TargetDistribution(const TensorBase& labels, int64_t classes,
                              double label_smoothing, DType dtype) {
  const TensorBase one_hot = ops::OneHot(labels, classes, dtype);
  if (label_smoothing == 0) return one_hot;
  return ops::BinaryScalar(BinaryOp::kAdd, Scale(one_hot, 1 - label_smoothing),
                           label_smoothing / static_cast<double>(classes));
}

// CrossEntropyForward() returns the loss; `log_probabilities` receives
// log_softmax(logits) [B, C] for the backward.
TensorBase CrossEntropyForward(const TensorBase& logits,
                               const TensorBase& labels, double label_smoothing,
                               TensorBase* log_probabilities) {
  *log_probabilities = ops::Softmax(logits, 1, /*log=*/true);
  // -log p at each label: [B, 1]. Gather checks the labels' range.
  const TensorBase picked =
      ops::Gather(*log_probabilities, 1, labels.Unsqueeze(1));
  TensorBase per_example = ops::Unary(UnaryOp::kNeg, picked);
  if (label_smoothing != 0) {
    const TensorBase uniform = ops::Unary(
        UnaryOp::kNeg, ops::Reduce(ReduceOp::kMean, *log_probabilities, 1));
    per_example =
        ops::Binary(BinaryOp::kAdd, Scale(per_example, 1 - label_smoothing),
                    Scale(uniform, label_smoothing));
  }
  return ops::ReduceAll(ReduceOp::kMean, per_example);
}

}  // namespace

Tensor<0> CrossEntropy(const Tensor<2>& logits_tensor,
                       const Tensor<1, Int>& labels_tensor,
                       double label_smoothing) {
  const TensorBase& logits = logits_tensor.base();
  const TensorBase& labels = labels_tensor.base();
  CheckFloat(logits, "cross_entropy", "logits");
  KINDLING_CHECK(labels.shape()[0] == logits.shape()[0],
                 "cross_entropy: %d labels for logits %s", labels.shape()[0],
                 logits.shape().ToString());
  KINDLING_CHECK(logits.shape()[1] > 0,
                 "cross_entropy: logits %s have no classes",
                 logits.shape().ToString());
  KINDLING_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
                 "cross_entropy: label_smoothing %g outside [0, 1]",
                 label_smoothing);
  TensorBase log_probabilities;
  if (!autodiff::ShouldRecord(logits)) {
    return Tensor<0>(CrossEntropyForward(logits, labels, label_smoothing,
                                         &log_probabilities));
  }
  TensorBase loss = autodiff::Untracked([&] {
    return CrossEntropyForward(logits, labels, label_smoothing,
                               &log_probabilities);
  });
  // d logits = grad * (softmax(logits) - q) / B.
  return Tensor<0>(autodiff::Record(
      "cross_entropy", {logits}, std::move(loss),
      [log_probabilities = log_probabilities.Detach(),
       labels = SavedTensor(labels),
       label_smoothing](const TensorBase& grad) -> GradList {
        // One pass where the backend has it (the same values). Scoped so
        // that, declined, its output is freed before the composed ops run.
        {
          const TensorBase fused = TensorBase::Empty(
              log_probabilities.shape(), log_probabilities.dtype(),
              log_probabilities.device());
          if (GetBackend(fused.device())
                  .CrossEntropyBackward(fused, log_probabilities, labels.get(),
                                        label_smoothing, grad)) {
            return {fused};
          }
        }
        const int64_t batch = log_probabilities.shape()[0];
        const int64_t classes = log_probabilities.shape()[1];
        const TensorBase target = TargetDistribution(
            labels, classes, label_smoothing, log_probabilities.dtype());
        const TensorBase difference =
            ops::Binary(BinaryOp::kSub,
                        ops::Unary(UnaryOp::kExp, log_probabilities), target);
        return {ops::Binary(BinaryOp::kMul, difference,
                            ops::BinaryScalar(BinaryOp::kDiv, grad,
                                              static_cast<double>(batch)))};
      }));
}

namespace internal {

// --- Mean squared error
// ---------------------------------------------------------

TensorBase MseLoss(const TensorBase& prediction, const TensorBase& target) {
  CheckSameShapeAndDType(prediction, target, "mse_loss");
  const auto forward = [&](TensorBase* difference) {
    *difference = ops::Binary(BinaryOp::kSub, prediction, target);
    return ops::ReduceAll(
        ReduceOp::kMean, ops::Binary(BinaryOp::kMul, *difference, *difference));
  };
  TensorBase difference;
  if (!autodiff::ShouldRecord(prediction, target)) return forward(&difference);
  TensorBase loss = autodiff::Untracked([&] { return forward(&difference); });
  // d prediction = grad * 2 (prediction - target) / numel = -d target.
  return autodiff::Record(
      "mse_loss", {prediction, target}, std::move(loss),
      [difference = difference.Detach(),
       need_prediction = prediction.is_require_grad(),
       need_target =
           target.is_require_grad()](const TensorBase& grad) -> GradList {
        const double count = static_cast<double>(difference.numel());
        const TensorBase d_prediction =
            ops::Binary(BinaryOp::kMul, difference,
                        ops::BinaryScalar(BinaryOp::kMul, grad, 2 / count));
        return {need_prediction ? d_prediction : TensorBase(),
                need_target ? ops::Unary(UnaryOp::kNeg, d_prediction)
                            : TensorBase()};
      });
}

// --- Binary cross-entropy with logits
// ------------------------------------------

TensorBase BinaryCrossEntropyWithLogits(const TensorBase& logits,
                                        const TensorBase& targets) {
  CheckSameShapeAndDType(logits, targets, "binary_cross_entropy_with_logits");
  const auto forward = [&] {
    // max(x, 0) - x t + log(1 + exp(-|x|))
    const TensorBase softplus_tail = ops::Unary(
        UnaryOp::kLog,
        ops::ScalarBinary(
            BinaryOp::kAdd, 1,
            ops::Unary(
                UnaryOp::kExp,
                ops::Unary(UnaryOp::kNeg, ops::Unary(UnaryOp::kAbs, logits)))));
    const TensorBase per_element = ops::Binary(
        BinaryOp::kAdd,
        ops::Binary(BinaryOp::kSub, ops::Unary(UnaryOp::kRelu, logits),
                    ops::Binary(BinaryOp::kMul, logits, targets)),
        softplus_tail);
    return ops::ReduceAll(ReduceOp::kMean, per_element);
  };
  if (!autodiff::ShouldRecord(logits, targets)) return forward();
  TensorBase loss = autodiff::Untracked(forward);
  // d x = grad * (sigmoid(x) - t) / numel; d t = -grad * x / numel.
  return autodiff::Record(
      "binary_cross_entropy_with_logits", {logits, targets}, std::move(loss),
      [logits = SavedTensor(logits), targets = SavedTensor(targets),
       need_logits = logits.is_require_grad(),
       need_targets =
           targets.is_require_grad()](const TensorBase& grad) -> GradList {
        const TensorBase scale = ops::BinaryScalar(
            BinaryOp::kDiv, grad, static_cast<double>(logits.get().numel()));
        TensorBase d_logits, d_targets;
        if (need_logits) {
          d_logits = ops::Binary(
              BinaryOp::kMul,
              ops::Binary(BinaryOp::kSub, ops::Unary(UnaryOp::kSigmoid, logits),
                          targets),
              scale);
        }
        if (need_targets) {
          d_targets = ops::Binary(BinaryOp::kMul,
                                  ops::Unary(UnaryOp::kNeg, logits), scale);
        }
        return {d_logits, d_targets};
      });
}

}  // namespace internal
}  // namespace kindling::nn
