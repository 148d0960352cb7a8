// UpdateRule: what an optimizer does to one parameter at each step, apart
// from everything the Optimizer does around it (choosing the parameters,
// groups and schedules, creating and moving state, validation, save/load).
//
// A rule names itself and its state tensors, checks, writes and reads its
// hyper-parameters, and updates a parameter in place. SGD, Adam, AdamW,
// RMSprop and Lion are rules (rules.h); a new one is one class:
//
//   class SignSgd final : public kindling::UpdateRule {
//    public:
//     explicit SignSgd(double lr) : lr_(lr) {}
//     std::string_view name() const override { return "sign_sgd"; }
//     double lr() const override { return lr_; }
//     double weight_decay() const override { return 0; }
//     std::vector<std::string_view> StateNames() const override { return {}; }
//     void Validate(std::vector<std::string>& errors) const override {
//       kindling::CheckHyperRange(errors, "lr", lr_, 0);
//     }
//     void WriteHyper(kindling::HyperWriter& out) const override {
//       out.Double("lr", lr_);
//     }
//     std::shared_ptr<const UpdateRule> ReadHyper(
//         kindling::HyperReader& in) const override {
//       return std::make_shared<SignSgd>(in.Double("lr"));
//     }
//     void Update(const kindling::UpdateContext& context,
//                 kindling::TensorBase& param, const kindling::TensorBase&
//                 grad, std::span<kindling::TensorBase> state) const override;
//   };
//   absl::StatusOr<kindling::Optimizer> optimizer =
//       kindling::Optimizer::FromRule(std::make_shared<SignSgd>(0.01));
//
// A rule is immutable once made (the Optimizer shares it between copies);
// its hyper-parameters change only by Load(), which makes a new one through
// ReadHyper().
#ifndef KINDLING_OPTIM_UPDATE_RULE_H_
#define KINDLING_OPTIM_UPDATE_RULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kindling/tensor/tensor_base.h"

namespace kindling {

// UpdateContext: what one parameter's step knows besides its tensors.
struct UpdateContext {
  // The learning rate of this step: the group's, through the schedule.
  double lr = 0;
  // The group's weight decay.
  double weight_decay = 0;
  // This parameter's step number, 1 on its first step (PyTorch's
  // state['step'] after the increment).
  int64_t step = 1;
};

// HyperWriter: a rule's hyper-parameters as named text, as Save() stores
// them (one metadata entry each).
class HyperWriter {
 public:
  // Double() stores the shortest text that reads back to the same bits.
  void Double(std::string_view name, double value);
  void Bool(std::string_view name, bool value);

  const std::vector<std::pair<std::string, std::string>>& entries() const {
    return entries_;
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// HyperReader: reads back what a HyperWriter stored. A missing or malformed
// entry is recorded in errors() and reads as 0 / false, so a rule's
// ReadHyper() needs no error handling of its own: Load() reports every
// error at once and changes nothing.
class HyperReader {
 public:
  // `lookup(name)` is the stored text of `name`, or null.
  explicit HyperReader(
      std::function<const std::string*(std::string_view)> lookup)
      : lookup_(std::move(lookup)) {}

  double Double(std::string_view name);
  bool Bool(std::string_view name);

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  const std::string* Text(std::string_view name);

  std::function<const std::string*(std::string_view)> lookup_;
  std::vector<std::string> errors_;
};

// CheckHyperRange() appends "<name> <value> must be in [low, high)" (or
// ">= low" without `high`) to `errors` when `value` is outside the range.
void CheckHyperRange(std::vector<std::string>& errors, std::string_view name,
                     double value, double low,
                     std::optional<double> high = std::nullopt);

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;

  // name(): the rule's name, saved with its state ("sgd", "adamw", ...).
  // Load() accepts only a file saved by a rule of the same name.
  virtual std::string_view name() const = 0;

  // lr() and weight_decay(): the defaults a ParamGroup may override.
  virtual double lr() const = 0;
  virtual double weight_decay() const = 0;

  // StateNames(): the state tensors kept per parameter, in the order
  // Update() receives them; each has the parameter's shape, dtype and
  // device, and is zero-filled before the first step.
  virtual std::vector<std::string_view> StateNames() const = 0;

  // Validate(): one message per hyper-parameter out of range.
  virtual void Validate(std::vector<std::string>& errors) const = 0;

  // WriteHyper() stores every hyper-parameter; ReadHyper() makes a rule of
  // this kind from them (errors go to `in`).
  virtual void WriteHyper(HyperWriter& out) const = 0;
  virtual std::shared_ptr<const UpdateRule> ReadHyper(
      HyperReader& in) const = 0;

  // Update(): one step of `param`, in place, from `grad` (contiguous, of
  // param's shape, dtype and device) and `state` (StateNames() tensors,
  // updated in place). `param` is contiguous and writable.
  virtual void Update(const UpdateContext& context, TensorBase& param,
                      const TensorBase& grad,
                      std::span<TensorBase> state) const = 0;
};

}  // namespace kindling

#endif  // KINDLING_OPTIM_UPDATE_RULE_H_
