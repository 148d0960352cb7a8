// RMSprop: torch.optim.RMSprop (PyTorch 1.13, foreach=False), in PyTorch's
// order:
//
//   g = grad (+ weight_decay * param)
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   grad_avg   = alpha * grad_avg + (1 - alpha) * g          (centered)
//   avg = sqrt(square_avg (- grad_avg^2 when centered)) + eps
//   buf = momentum * buf + g / avg;  param -= lr * buf       (momentum > 0)
//   param -= lr * (g / avg)                                  (otherwise)
//
// A device's fused kernel (fused_update.h; the CPU's in optim/cpu/) runs it
// in one pass; without one, or for a dtype the kernel lacks, tensor ops do.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/rules.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_mode.h"

namespace kindling {
namespace {

class RmsProp final : public UpdateRule {
 public:
  explicit RmsProp(const RmsPropOptions& options) : options_(options) {}

  std::string_view name() const override { return "rmsprop"; }
  double lr() const override { return options_.lr; }
  double weight_decay() const override { return options_.weight_decay; }

  std::vector<std::string_view> StateNames() const override {
    std::vector<std::string_view> names = {"square_avg"};
    if (options_.momentum > 0) names.push_back("momentum_buffer");
    if (options_.centered) names.push_back("grad_avg");
    return names;
  }

  void Validate(std::vector<std::string>& errors) const override {
    CheckHyperRange(errors, "lr", options_.lr, 0);
    CheckHyperRange(errors, "alpha", options_.alpha, 0);
    CheckHyperRange(errors, "eps", options_.eps, 0);
    CheckHyperRange(errors, "weight_decay", options_.weight_decay, 0);
    CheckHyperRange(errors, "momentum", options_.momentum, 0);
  }

  void WriteHyper(HyperWriter& out) const override {
    out.Double("lr", options_.lr);
    out.Double("alpha", options_.alpha);
    out.Double("eps", options_.eps);
    out.Double("weight_decay", options_.weight_decay);
    out.Double("momentum", options_.momentum);
    out.Bool("centered", options_.centered);
  }

  std::shared_ptr<const UpdateRule> ReadHyper(HyperReader& in) const override {
    RmsPropOptions options;
    options.lr = in.Double("lr");
    options.alpha = in.Double("alpha");
    options.eps = in.Double("eps");
    options.weight_decay = in.Double("weight_decay");
    options.momentum = in.Double("momentum");
    options.centered = in.Bool("centered");
    return std::make_shared<RmsProp>(options);
  }

  void Update(const UpdateContext& context, TensorBase& param,
              const TensorBase& grad,
              std::span<TensorBase> state) const override {
    RmsPropStep step;
    step.lr = context.lr;
    step.alpha = options_.alpha;
    step.eps = options_.eps;
    step.weight_decay = context.weight_decay;
    step.momentum = options_.momentum;
    step.centered = options_.centered;
    if (FusedUpdates<RmsPropStep>::Run(step, param, grad, state)) return;
    UpdateWithTensorOps(context, param, grad, state);
  }

 private:
  void UpdateWithTensorOps(const UpdateContext& context, TensorBase& param,
                           const TensorBase& grad,
                           std::span<TensorBase> state) const {
    using ops::Binary;
    using ops::BinaryInPlace;
    using ops::BinaryScalar;
    using ops::BinaryScalarInPlace;
    NoGradGuard no_grad;
    const double alpha = options_.alpha;
    TensorBase g = grad;
    if (context.weight_decay != 0) {
      g = Binary(BinaryOp::kAdd, grad,
                 BinaryScalar(BinaryOp::kMul, param, context.weight_decay));
    }
    TensorBase& square_avg = state[0];
    BinaryScalarInPlace(BinaryOp::kMul, square_avg, alpha);
    BinaryInPlace(
        BinaryOp::kAdd, square_avg,
        Binary(BinaryOp::kMul, BinaryScalar(BinaryOp::kMul, g, 1 - alpha), g));
    TensorBase avg;
    if (options_.centered) {
      TensorBase& grad_avg = state.back();
      BinaryScalarInPlace(BinaryOp::kMul, grad_avg, alpha);
      BinaryInPlace(BinaryOp::kAdd, grad_avg,
                    BinaryScalar(BinaryOp::kMul, g, 1 - alpha));
      avg = ops::Unary(UnaryOp::kSqrt,
                       Binary(BinaryOp::kSub, square_avg,
                              Binary(BinaryOp::kMul, grad_avg, grad_avg)));
    } else {
      avg = ops::Unary(UnaryOp::kSqrt, square_avg);
    }
    BinaryScalarInPlace(BinaryOp::kAdd, avg, options_.eps);
    if (options_.momentum > 0) {
      TensorBase& buffer = state[1];
      BinaryScalarInPlace(BinaryOp::kMul, buffer, options_.momentum);
      BinaryInPlace(BinaryOp::kAdd, buffer, Binary(BinaryOp::kDiv, g, avg));
      BinaryInPlace(BinaryOp::kAdd, param,
                    BinaryScalar(BinaryOp::kMul, buffer, -context.lr));
    } else {
      BinaryInPlace(BinaryOp::kAdd, param,
                    BinaryScalar(BinaryOp::kMul, Binary(BinaryOp::kDiv, g, avg),
                                 -context.lr));
    }
  }

  RmsPropOptions options_;
};

}  // namespace

std::shared_ptr<const UpdateRule> RmsPropRule(const RmsPropOptions& options) {
  return std::make_shared<RmsProp>(options);
}

}  // namespace kindling
