// Adam and AdamW: torch.optim.Adam / AdamW (PyTorch 1.13, foreach=False).
// The two differ only in how weight decay applies: an L2 term added to the
// gradient (Adam) or the parameter scaled by 1 - lr * weight_decay (AdamW).
// A device's fused kernel (fused_update.h; CPU in optim/cpu/, CUDA in
// optim/cuda/) runs a step in one pass per parameter; without one, tensor
// ops do.
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kindling/optim/fused_steps.h"
#include "kindling/optim/fused_update.h"
#include "kindling/optim/rules.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/grad_mode.h"

namespace kindling {
namespace {

// AdamHyper: the fields AdamOptions and AdamWOptions share.
struct AdamHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
};

template <class AdamLikeOptions>
AdamHyper HyperOf(const AdamLikeOptions& options) {
  return {options.lr,  options.betas.first,  options.betas.second,
          options.eps, options.weight_decay, options.amsgrad};
}

class Adam final : public UpdateRule {
 public:
  Adam(const AdamHyper& hyper, bool decoupled)
      : hyper_(hyper), decoupled_(decoupled) {}

  std::string_view name() const override {
    return decoupled_ ? "adamw" : "adam";
  }
  double lr() const override { return hyper_.lr; }
  double weight_decay() const override { return hyper_.weight_decay; }

  std::vector<std::string_view> StateNames() const override {
    if (hyper_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
    return {"exp_avg", "exp_avg_sq"};
  }

  void Validate(std::vector<std::string>& errors) const override {
    CheckHyperRange(errors, "lr", hyper_.lr, 0);
    CheckHyperRange(errors, "weight_decay", hyper_.weight_decay, 0);
    CheckHyperRange(errors, "betas[0]", hyper_.beta1, 0, 1.0);
    CheckHyperRange(errors, "betas[1]", hyper_.beta2, 0, 1.0);
    CheckHyperRange(errors, "eps", hyper_.eps, 0);
  }

  void WriteHyper(HyperWriter& out) const override {
    out.Double("lr", hyper_.lr);
    out.Double("beta1", hyper_.beta1);
    out.Double("beta2", hyper_.beta2);
    out.Double("eps", hyper_.eps);
    out.Double("weight_decay", hyper_.weight_decay);
    out.Bool("amsgrad", hyper_.amsgrad);
  }

  std::shared_ptr<const UpdateRule> ReadHyper(HyperReader& in) const override {
    AdamHyper hyper;
    hyper.lr = in.Double("lr");
    hyper.beta1 = in.Double("beta1");
    hyper.beta2 = in.Double("beta2");
    hyper.eps = in.Double("eps");
    hyper.weight_decay = in.Double("weight_decay");
    hyper.amsgrad = in.Bool("amsgrad");
    return std::make_shared<Adam>(hyper, decoupled_);
  }

  void Update(const UpdateContext& context, TensorBase& param,
              const TensorBase& grad,
              std::span<TensorBase> state) const override {
    const double step_count = static_cast<double>(context.step);
    AdamStep step;
    step.lr = context.lr;
    step.beta1 = hyper_.beta1;
    step.beta2 = hyper_.beta2;
    step.eps = hyper_.eps;
    step.weight_decay = context.weight_decay;
    step.decoupled_weight_decay = decoupled_;
    step.amsgrad = hyper_.amsgrad;
    step.step_size = context.lr / (1 - std::pow(hyper_.beta1, step_count));
    step.bias_correction2_sqrt =
        std::sqrt(1 - std::pow(hyper_.beta2, step_count));
    if (FusedUpdates<AdamStep>::Run(step, param, grad, state)) return;
    UpdateWithTensorOps(step, param, grad, state);
  }

 private:
  static void UpdateWithTensorOps(const AdamStep& step, TensorBase& param,
                                  const TensorBase& grad,
                                  std::span<TensorBase> state) {
    using ops::Binary;
    using ops::BinaryInPlace;
    using ops::BinaryScalar;
    using ops::BinaryScalarInPlace;
    NoGradGuard no_grad;
    TensorBase g = grad;
    if (step.weight_decay != 0) {
      if (step.decoupled_weight_decay) {
        BinaryScalarInPlace(BinaryOp::kMul, param,
                            1 - step.lr * step.weight_decay);
      } else {
        g = Binary(BinaryOp::kAdd, g,
                   BinaryScalar(BinaryOp::kMul, param, step.weight_decay));
      }
    }
    TensorBase& exp_avg = state[0];
    BinaryScalarInPlace(BinaryOp::kMul, exp_avg, step.beta1);
    BinaryInPlace(BinaryOp::kAdd, exp_avg,
                  BinaryScalar(BinaryOp::kMul, g, 1 - step.beta1));
    TensorBase& exp_avg_sq = state[1];
    BinaryScalarInPlace(BinaryOp::kMul, exp_avg_sq, step.beta2);
    BinaryInPlace(BinaryOp::kAdd, exp_avg_sq,
                  Binary(BinaryOp::kMul,
                         BinaryScalar(BinaryOp::kMul, g, 1 - step.beta2), g));
    TensorBase second_moment = exp_avg_sq;
    if (step.amsgrad) {
      BinaryInPlace(BinaryOp::kMaximum, state[2], exp_avg_sq);
      second_moment = state[2];
    }
    TensorBase denom =
        BinaryScalar(BinaryOp::kDiv, ops::Unary(UnaryOp::kSqrt, second_moment),
                     step.bias_correction2_sqrt);
    BinaryScalarInPlace(BinaryOp::kAdd, denom, step.eps);
    BinaryInPlace(
        BinaryOp::kAdd, param,
        BinaryScalar(BinaryOp::kMul, Binary(BinaryOp::kDiv, exp_avg, denom),
                     -step.step_size));
  }

  AdamHyper hyper_;
  bool decoupled_;
};

}  // namespace

std::shared_ptr<const UpdateRule> AdamRule(const AdamOptions& options) {
  return std::make_shared<Adam>(HyperOf(options), /*decoupled=*/false);
}

std::shared_ptr<const UpdateRule> AdamWRule(const AdamWOptions& options) {
  return std::make_shared<Adam>(HyperOf(options), /*decoupled=*/true);
}

}  // namespace kindling
