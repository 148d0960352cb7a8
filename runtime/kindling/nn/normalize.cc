#include "kindling/nn/normalize.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/layer_norm_ops.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/saved_tensor.h"

namespace kindling::nn {
namespace {

// Grouping: how BatchNorm views its input to normalize it: [N, C, ...] as
// [N, C, S] with statistics over, and parameter gradients summed over, axes
// 0 and 2.
struct Grouping {
  Shape grouped;
  std::vector<int> statistic_axes;  // descending
  std::vector<int> parameter_axes;  // descending: dgamma, dbeta sum these
  Shape parameter_view;             // gamma and beta broadcast as this
};

TensorBase ReduceAxes(ReduceOp op, TensorBase tensor,
                      const std::vector<int>& axes) {
  for (const int axis : axes) tensor = ops::Reduce(op, tensor, axis);
  return tensor;
}

TensorBase Mul(const TensorBase& a, const TensorBase& b) {
  return ops::Binary(BinaryOp::kMul, a, b);
}
TensorBase Sub(const TensorBase& a, const TensorBase& b) {
  return ops::Binary(BinaryOp::kSub, a, b);
}

// Normalized: what the forward computes and the backward needs, all in the
// grouped view.
struct Normalized {
  TensorBase output;  // y
  TensorBase xhat;    // (x - mean) * rstd
  TensorBase rstd;    // 1 / sqrt(variance + eps), reduced shape
  TensorBase mean;    // reduced shape
  TensorBase variance;
};

Normalized NormalizeForward(const TensorBase& input, const TensorBase& gamma,
                            const TensorBase& beta, double epsilon,
                            const Grouping& grouping) {
  Normalized result;
  const TensorBase x = input.Reshape(grouping.grouped);
  result.mean = ReduceAxes(ReduceOp::kMean, x, grouping.statistic_axes);
  const TensorBase centered = Sub(x, result.mean);
  result.variance = ReduceAxes(ReduceOp::kMean, Mul(centered, centered),
                               grouping.statistic_axes);
  result.rstd = ops::ScalarBinary(
      BinaryOp::kDiv, 1,
      ops::Unary(UnaryOp::kSqrt,
                 ops::BinaryScalar(BinaryOp::kAdd, result.variance, epsilon)));
  result.xhat = Mul(centered, result.rstd);
  result.output = ops::Binary(
      BinaryOp::kAdd, Mul(result.xhat, gamma.Reshape(grouping.parameter_view)),
      beta.Reshape(grouping.parameter_view));
  result.output = result.output.Reshape(input.shape());
  return result;
}

// NormalizeBackward(): dx, dgamma, dbeta (see the header), each only when
// needed.
GradList NormalizeBackward(const TensorBase& grad, const TensorBase& xhat,
                           const TensorBase& rstd, const TensorBase& gamma,
                           const Grouping& grouping, const Shape& input_shape,
                           bool need_input, bool need_gamma, bool need_beta) {
  const TensorBase dy = grad.Reshape(grouping.grouped);
  TensorBase d_input, d_gamma, d_beta;
  if (need_input) {
    const TensorBase g = Mul(dy, gamma.Reshape(grouping.parameter_view));
    const TensorBase mean_g =
        ReduceAxes(ReduceOp::kMean, g, grouping.statistic_axes);
    const TensorBase mean_g_xhat =
        ReduceAxes(ReduceOp::kMean, Mul(g, xhat), grouping.statistic_axes);
    d_input = Mul(rstd, Sub(Sub(g, mean_g), Mul(xhat, mean_g_xhat)))
                  .Reshape(input_shape);
  }
  if (need_gamma) {
    d_gamma = ReduceAxes(ReduceOp::kSum, Mul(dy, xhat), grouping.parameter_axes)
                  .Reshape(gamma.shape());
  }
  if (need_beta) {
    d_beta = ReduceAxes(ReduceOp::kSum, dy, grouping.parameter_axes)
                 .Reshape(gamma.shape());
  }
  return {d_input, d_gamma, d_beta};
}

// Normalize() runs the forward, recording one node when a gradient is
// needed.
TensorBase Normalize(const char* name, const TensorBase& input,
                     const TensorBase& gamma, const TensorBase& beta,
                     double epsilon, const Grouping& grouping,
                     Normalized* normalized) {
  if (!autodiff::ShouldRecord(input, gamma, beta)) {
    *normalized = NormalizeForward(input, gamma, beta, epsilon, grouping);
    return normalized->output;
  }
  TensorBase output = autodiff::Untracked([&] {
    *normalized = NormalizeForward(input, gamma, beta, epsilon, grouping);
    return normalized->output;
  });
  normalized->output = TensorBase();
  return autodiff::Record(
      name, {input, gamma, beta}, std::move(output),
      [xhat = normalized->xhat.Detach(), rstd = normalized->rstd.Detach(),
       gamma = SavedTensor(gamma), grouping, input_shape = input.shape(),
       need_input = input.is_require_grad(),
       need_gamma = gamma.is_require_grad(),
       need_beta = beta.is_require_grad()](const TensorBase& grad) {
        return NormalizeBackward(grad, xhat, rstd, gamma, grouping, input_shape,
                                 need_input, need_gamma, need_beta);
      });
}

void CheckParameters(const TensorBase& input, const TensorBase& gamma,
                     const TensorBase& beta, int64_t features,
                     const char* name) {
  KINDLING_CHECK(
      gamma.shape() == Shape{features} && beta.shape() == Shape{features},
      "%s: input %s needs gamma and beta of [%d], got %s and %s", name,
      input.shape().ToString(), features, gamma.shape().ToString(),
      beta.shape().ToString());
}

// LayerNormSaved: what the layer_norm node keeps for its backward. The
// input is checked against in-place writes before backward reads it (an
// optimizer step between forward and backward), and so is gamma, read only
// for the input's gradient; mean and rstd are the op's own and never handed
// out.
struct LayerNormSaved {
  SavedTensor input;
  SavedTensor gamma;
  TensorBase mean;
  TensorBase rstd;
  ops::LayerNormNeeds needs;
};

}  // namespace

TensorBase LayerNormOp(const TensorBase& input, const TensorBase& gamma,
                       const TensorBase& beta, double epsilon) {
  KINDLING_CHECK(input.rank() >= 1, "layer_norm: input %s has no axis",
                 input.shape().ToString());
  const int64_t features = input.shape()[input.rank() - 1];
  CheckParameters(input, gamma, beta, features, "layer_norm");
  if (!autodiff::ShouldRecord(input, gamma, beta)) {
    return ops::LayerNorm(input, gamma, beta, epsilon).output;
  }
  // ops::LayerNorm records nothing: its results carry no graph.
  ops::LayerNormResult result = ops::LayerNorm(input, gamma, beta, epsilon);
  const ops::LayerNormNeeds needs{
      input.is_require_grad(), gamma.is_require_grad(), beta.is_require_grad()};
  LayerNormSaved saved{SavedTensor(input),
                       needs.input ? SavedTensor(gamma) : SavedTensor(),
                       std::move(result.mean), std::move(result.rstd), needs};
  return autodiff::Record(
      "layer_norm", {input, gamma, beta}, std::move(result.output),
      [saved = std::move(saved)](const TensorBase& grad) -> GradList {
        ops::LayerNormGradients grads =
            ops::LayerNormBackward(grad, saved.input, saved.mean, saved.rstd,
                                   saved.gamma, saved.needs);
        return {std::move(grads.input), std::move(grads.gamma),
                std::move(grads.beta)};
      });
}

TensorBase BatchNormTrainOp(const TensorBase& input, const TensorBase& gamma,
                            const TensorBase& beta, double epsilon,
                            BatchStatistics* statistics) {
  KINDLING_CHECK(input.rank() >= 2, "batch_norm: input %s is not [N, C, ...]",
                 input.shape().ToString());
  const int64_t batch = input.shape()[0];
  const int64_t channels = input.shape()[1];
  CheckParameters(input, gamma, beta, channels, "batch_norm");
  const int64_t per_channel = channels == 0 ? 0 : input.numel() / channels;
  KINDLING_CHECK(per_channel > 1,
                 "batch_norm: training needs more than one value per channel, "
                 "got input %s",
                 input.shape().ToString());
  const Grouping grouping{Shape{batch, channels, per_channel / batch},
                          {2, 0},
                          {2, 0},
                          Shape{1, channels, 1}};
  Normalized normalized;
  TensorBase output = Normalize("batch_norm", input, gamma, beta, epsilon,
                                grouping, &normalized);
  statistics->mean = normalized.mean.Reshape(Shape{channels}).Detach();
  statistics->variance = normalized.variance.Reshape(Shape{channels}).Detach();
  return output;
}

}  // namespace kindling::nn
