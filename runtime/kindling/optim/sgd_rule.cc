// SGD: torch.optim.SGD (PyTorch 1.13, foreach=False), as one fused Backend
// kernel per parameter (Backend::SgdUpdate).
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kindling/optim/rules.h"
#include "kindling/tensor/backend.h"

namespace kindling {
namespace {

class Sgd final : public UpdateRule {
 public:
  explicit Sgd(const SgdOptions& options) : options_(options) {}

  std::string_view name() const override { return "sgd"; }
  double lr() const override { return options_.lr; }
  double weight_decay() const override { return options_.weight_decay; }

  std::vector<std::string_view> StateNames() const override {
    if (options_.momentum == 0) return {};
    return {"momentum_buffer"};
  }

  void Validate(std::vector<std::string>& errors) const override {
    CheckHyperRange(errors, "lr", options_.lr, 0);
    CheckHyperRange(errors, "weight_decay", options_.weight_decay, 0);
    CheckHyperRange(errors, "momentum", options_.momentum, 0);
    if (options_.nesterov &&
        (options_.momentum <= 0 || options_.dampening != 0)) {
      errors.push_back(
          "nesterov requires momentum > 0 and dampening == 0 (PyTorch's rule)");
    }
  }

  void WriteHyper(HyperWriter& out) const override {
    out.Double("lr", options_.lr);
    out.Double("momentum", options_.momentum);
    out.Double("dampening", options_.dampening);
    out.Bool("nesterov", options_.nesterov);
    out.Double("weight_decay", options_.weight_decay);
  }

  std::shared_ptr<const UpdateRule> ReadHyper(HyperReader& in) const override {
    SgdOptions options;
    options.lr = in.Double("lr");
    options.momentum = in.Double("momentum");
    options.dampening = in.Double("dampening");
    options.nesterov = in.Bool("nesterov");
    options.weight_decay = in.Double("weight_decay");
    return std::make_shared<Sgd>(options);
  }

  void Update(const UpdateContext& context, TensorBase& param,
              const TensorBase& grad,
              std::span<TensorBase> state) const override {
    Backend::SgdUpdateScalars scalars;
    scalars.lr = context.lr;
    scalars.momentum = options_.momentum;
    scalars.dampening = options_.dampening;
    scalars.weight_decay = context.weight_decay;
    scalars.nesterov = options_.nesterov;
    scalars.first_step = context.step == 1;
    const TensorBase buffer = state.empty() ? TensorBase() : state[0];
    GetBackend(param.device()).SgdUpdate(param, grad, buffer, scalars);
  }

 private:
  SgdOptions options_;
};

}  // namespace

std::shared_ptr<const UpdateRule> SgdRule(const SgdOptions& options) {
  return std::make_shared<Sgd>(options);
}

}  // namespace kindling
