// Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms",
// Algorithm 2):
//
//   param *= 1 - lr * weight_decay
//   param -= lr * sign(beta1 * exp_avg + (1 - beta1) * grad)
//   exp_avg = beta2 * exp_avg + (1 - beta2) * grad
//
// sign(0) is 0, as torch.sign's, so a coordinate whose interpolation is
// exactly zero does not move. A device's fused kernel (fused_update.h; the
// CPU's in optim/cpu/) runs it in one pass; without one, or for a dtype the
// kernel lacks, tensor ops do.
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

// Sign() is -1, 0 or 1 per element, in x's dtype.
TensorBase Sign(const TensorBase& x) {
  const TensorBase positive =
      ops::BinaryScalar(BinaryOp::kGreater, x, 0).To(x.dtype());
  const TensorBase negative =
      ops::BinaryScalar(BinaryOp::kLess, x, 0).To(x.dtype());
  return ops::Binary(BinaryOp::kSub, positive, negative);
}

class Lion final : public UpdateRule {
 public:
  explicit Lion(const LionOptions& options) : options_(options) {}

  std::string_view name() const override { return "lion"; }
  double lr() const override { return options_.lr; }
  double weight_decay() const override { return options_.weight_decay; }
  std::vector<std::string_view> StateNames() const override {
    return {"exp_avg"};
  }

  void Validate(std::vector<std::string>& errors) const override {
    CheckHyperRange(errors, "lr", options_.lr, 0);
    CheckHyperRange(errors, "weight_decay", options_.weight_decay, 0);
    CheckHyperRange(errors, "betas[0]", options_.betas.first, 0, 1.0);
    CheckHyperRange(errors, "betas[1]", options_.betas.second, 0, 1.0);
  }

  void WriteHyper(HyperWriter& out) const override {
    out.Double("lr", options_.lr);
    out.Double("beta1", options_.betas.first);
    out.Double("beta2", options_.betas.second);
    out.Double("weight_decay", options_.weight_decay);
  }

  std::shared_ptr<const UpdateRule> ReadHyper(HyperReader& in) const override {
    LionOptions options;
    options.lr = in.Double("lr");
    options.betas = {in.Double("beta1"), in.Double("beta2")};
    options.weight_decay = in.Double("weight_decay");
    return std::make_shared<Lion>(options);
  }

  void Update(const UpdateContext& context, TensorBase& param,
              const TensorBase& grad,
              std::span<TensorBase> state) const override {
    const LionStep step{context.lr, options_.betas.first, options_.betas.second,
                        context.weight_decay};
    if (FusedUpdates<LionStep>::Run(step, param, grad, state)) return;
    UpdateWithTensorOps(context, param, grad, state);
  }

 private:
  void UpdateWithTensorOps(const UpdateContext& context, TensorBase& param,
                           const TensorBase& grad,
                           std::span<TensorBase> state) const {
    NoGradGuard no_grad;
    const auto [beta1, beta2] = options_.betas;
    TensorBase& exp_avg = state[0];
    const TensorBase interpolation = ops::Binary(
        BinaryOp::kAdd, ops::BinaryScalar(BinaryOp::kMul, exp_avg, beta1),
        ops::BinaryScalar(BinaryOp::kMul, grad, 1 - beta1));
    if (context.weight_decay != 0) {
      ops::BinaryScalarInPlace(BinaryOp::kMul, param,
                               1 - context.lr * context.weight_decay);
    }
    ops::BinaryInPlace(
        BinaryOp::kAdd, param,
        ops::BinaryScalar(BinaryOp::kMul, Sign(interpolation), -context.lr));
    ops::BinaryScalarInPlace(BinaryOp::kMul, exp_avg, beta2);
    ops::BinaryInPlace(BinaryOp::kAdd, exp_avg,
                       ops::BinaryScalar(BinaryOp::kMul, grad, 1 - beta2));
  }

  LionOptions options_;
};

}  // namespace

std::shared_ptr<const UpdateRule> LionRule(const LionOptions& options) {
  return std::make_shared<Lion>(options);
}

}  // namespace kindling
