// Adam and AdamW: torch.optim.Adam / AdamW (PyTorch 1.13, foreach=False),
// as one fused Backend kernel per parameter (Backend::AdamUpdate). The two
// differ only in how weight decay applies: an L2 term added to the gradient
// (Adam) or the parameter scaled by 1 - lr * weight_decay (AdamW).
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kindling/optim/rules.h"
#include "kindling/tensor/backend.h"

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
    const double step = static_cast<double>(context.step);
    Backend::AdamUpdateScalars scalars;
    scalars.lr = context.lr;
    scalars.beta1 = hyper_.beta1;
    scalars.beta2 = hyper_.beta2;
    scalars.eps = hyper_.eps;
    scalars.weight_decay = context.weight_decay;
    scalars.decoupled_weight_decay = decoupled_;
    scalars.amsgrad = hyper_.amsgrad;
    scalars.step_size = context.lr / (1 - std::pow(hyper_.beta1, step));
    scalars.bias_correction2_sqrt = std::sqrt(1 - std::pow(hyper_.beta2, step));
    const TensorBase max_exp_avg_sq =
        state.size() > 2 ? state[2] : TensorBase();
    GetBackend(param.device())
        .AdamUpdate(param, grad, state[0], state[1], max_exp_avg_sq, scalars);
  }

 private:
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
