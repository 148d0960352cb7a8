// SGD: torch.optim.SGD (PyTorch 1.13, foreach=False). A device's fused
// kernel (fused_update.h; CPU in optim/cpu/, CUDA in optim/cuda/) runs it in
// one pass per parameter; without one, tensor ops do.
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
    SgdStep step;
    step.lr = context.lr;
    step.momentum = options_.momentum;
    step.dampening = options_.dampening;
    step.weight_decay = context.weight_decay;
    step.nesterov = options_.nesterov;
    step.first_step = context.step == 1;
    if (FusedUpdates<SgdStep>::Run(step, param, grad, state)) return;
    UpdateWithTensorOps(step, param, grad, state);
  }

 private:
  static void UpdateWithTensorOps(const SgdStep& step, TensorBase& param,
                                  const TensorBase& grad,
                                  std::span<TensorBase> state) {
    using ops::Binary;
    using ops::BinaryScalar;
    NoGradGuard no_grad;
    TensorBase g = grad;
    if (step.weight_decay != 0) {
      g = Binary(BinaryOp::kAdd, g,
                 BinaryScalar(BinaryOp::kMul, param, step.weight_decay));
    }
    if (step.momentum != 0) {
      TensorBase& buffer = state[0];
      if (step.first_step) {
        ops::AssignInPlace(buffer, g);
      } else {
        ops::BinaryScalarInPlace(BinaryOp::kMul, buffer, step.momentum);
        ops::BinaryInPlace(BinaryOp::kAdd, buffer,
                           BinaryScalar(BinaryOp::kMul, g, 1 - step.dampening));
      }
      g = step.nesterov
              ? Binary(BinaryOp::kAdd, g,
                       BinaryScalar(BinaryOp::kMul, buffer, step.momentum))
              : buffer;
    }
    ops::BinaryInPlace(BinaryOp::kAdd, param,
                       BinaryScalar(BinaryOp::kMul, g, -step.lr));
  }

  SgdOptions options_;
};

}  // namespace

std::shared_ptr<const UpdateRule> SgdRule(const SgdOptions& options) {
  return std::make_shared<Sgd>(options);
}

}  // namespace kindling
