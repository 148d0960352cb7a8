// Optimizer: an update rule (SGD, Adam, AdamW, RMSprop, Lion, or one of your
// own: update_rule.h) over a module's parameters, with state keyed by
// ParamId, in-place updates and checkpointable state.
//
//   absl::StatusOr<kindling::Optimizer> optimizer = kindling::Optimizer::AdamW(
//       {.lr = 3e-4, .weight_decay = 0.1},
//       {{.pattern = R"(.*bias|.*norm.*)", .weight_decay = 0.0}});
//   optimizer->set_schedule(kindling::LrSchedule::CosineWithWarmup(100, 5000));
//   for (...) {
//     kindling::Gradients grads = kindling::Backward(loss);
//     KINDLING_RETURN_IF_ERROR(optimizer->Step(model, grads));
//   }
//   KINDLING_RETURN_IF_ERROR(optimizer->Save(model, "optimizer.safetensors"));
//
// Numerics are PyTorch 1.13's (torch.optim.SGD/Adam/AdamW/RMSprop,
// foreach=False), hyper-parameters have PyTorch's names and defaults
// (options.h); Lion follows its paper.
//
// Step(model, grads):
//   * visits each distinct parameter once: tied fields (copies of one Param,
//     hence one ParamId) are stepped once and stay tied;
//   * skips frozen parameters (require_grad false) and those without a
//     gradient, leaving their state untouched (PyTorch: p.grad is None);
//   * creates a parameter's state on its first step, zero-filled, on the
//     parameter's device with its dtype; state made on another device (the
//     model moved since, or was loaded elsewhere) follows the parameter to
//     its device before the update. That is the only allocation where the
//     rule has a fused kernel for the device and dtype (rules.h says where):
//     later steps run one kernel per tensor writing the parameter's own
//     storage, and allocate no tensor;
//   * writes in place. A parameter whose storage is read-only (borrowed from
//     a read-only mapping) first gets a private copy, assigned back into
//     `model` (every tied field gets the same Param);
//   * validates everything first (gradient shape, dtype and device, state
//     shape, two different tensors under one ParamId) and on error returns
//     InvalidArgument naming the parameter's path, with
//     the model and the optimizer untouched.
// The learning rate of the step after t completed steps is
// schedule.LearningRate(group lr, t).
//
// Save(model, path) writes the state as a safetensors record: tensors named
// `<param path>.<state>` (`fc1.weight.exp_avg`), and in the metadata the
// optimizer type, its hyper-parameters and groups, the step count, and per
// parameter its ParamId and step count. Load(model, path) restores it into
// this optimizer (type, hyper-parameters, groups, step count and state),
// matching each saved parameter to the model's by ParamId, or, when no
// parameter has that id, by its path after `key_remap`. Loading is
// all-or-nothing: any problem (unknown or different optimizer type, missing
// or unexpected tensor, shape or dtype mismatch, a parameter not in the
// model) is one InvalidArgument listing each with its key, and the optimizer
// is unchanged. Stepping, saving, loading into a fresh optimizer and stepping
// on reproduces uninterrupted stepping bit for bit.
//
// Thread safety: an Optimizer is a value used by one thread at a time.
#ifndef KINDLING_OPTIM_OPTIMIZER_H_
#define KINDLING_OPTIM_OPTIMIZER_H_

#include <any>
#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/autodiff/gradients.h"
#include "kindling/core/param_id.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/options.h"
#include "kindling/module/erased.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"
#include "kindling/optim/lr_schedule.h"
#include "kindling/optim/options.h"
#include "kindling/optim/update_rule.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// OptimizerLoadOptions: how Load() matches saved state to parameters whose
// ParamId is not in the model (e.g. a model initialized afresh).
struct OptimizerLoadOptions {
  // Rewrites saved parameter paths before matching by path (same rules as
  // LoadOptions::key_remap).
  std::vector<KeyRemapRule> key_remap;
};

namespace optim_internal {

// StepItem: one parameter field with a gradient, as Step() collects it.
struct StepItem {
  std::string path;
  ParamId id;
  TensorBase value;
  TensorBase grad;  // a handle on the gradient Gradients holds
  // Set by PrepareStep(): another field with this id came first (tied).
  bool duplicate = false;
  // Set by PrepareStep(): `value` is a writable copy the model must take.
  bool replaced = false;
};

// LoadTarget: one parameter field, as Load() collects it.
struct LoadTarget {
  std::string path;
  ParamId id;
  Shape shape;
  DType dtype = DType::kF32;
  Device device;
};

}  // namespace optim_internal

class Optimizer {
 public:
  // The factories return InvalidArgument for a negative lr, eps, alpha or
  // weight_decay, betas outside [0, 1), a negative momentum, nesterov
  // without momentum or with dampening, and a group pattern that is not a
  // valid regular expression.
  [[nodiscard]] static absl::StatusOr<Optimizer> Sgd(
      const SgdOptions& options, std::vector<ParamGroup> groups = {});
  [[nodiscard]] static absl::StatusOr<Optimizer> Adam(
      const AdamOptions& options, std::vector<ParamGroup> groups = {});
  [[nodiscard]] static absl::StatusOr<Optimizer> AdamW(
      const AdamWOptions& options, std::vector<ParamGroup> groups = {});
  [[nodiscard]] static absl::StatusOr<Optimizer> RmsProp(
      const RmsPropOptions& options, std::vector<ParamGroup> groups = {});
  [[nodiscard]] static absl::StatusOr<Optimizer> Lion(
      const LionOptions& options, std::vector<ParamGroup> groups = {});
  // FromRule(): any rule, e.g. one of your own (update_rule.h); its
  // Validate() messages come back as InvalidArgument.
  [[nodiscard]] static absl::StatusOr<Optimizer> FromRule(
      std::shared_ptr<const UpdateRule> rule,
      std::vector<ParamGroup> groups = {});

  // type() is the rule's name ("sgd", "adam", "adamw", "rmsprop", "lion"),
  // as saved.
  std::string_view type() const { return rule_->name(); }
  const UpdateRule& rule() const { return *rule_; }

  // step_count() is how many times Step() has succeeded.
  int64_t step_count() const { return step_count_; }

  // set_schedule() replaces the learning-rate schedule (Constant by default).
  void set_schedule(LrSchedule schedule) { schedule_ = std::move(schedule); }

  // LearningRate() is the rate the next step uses for parameter `path`.
  double LearningRate(std::string_view path) const;

  // has_state() is true once parameter `id` has been stepped (or loaded).
  bool has_state(ParamId id) const { return states_.contains(id); }

  // state_tensor() is the named state tensor of `id` (one of the rule's
  // StateNames(): "exp_avg", "momentum_buffer", ...), or null.
  const TensorBase* state_tensor(ParamId id, std::string_view name) const;

  // Step() updates every parameter of `model` that has a gradient in `grads`
  // (see the header comment).
  template <Module M>
  [[nodiscard]] absl::Status Step(M& model, const Gradients& grads);

  // Save() writes the state of `model`'s parameters to `path`, atomically.
  template <Module M>
  [[nodiscard]] absl::Status Save(const M& model,
                                  const std::string& path) const;

  // Load() replaces this optimizer's state with the one saved at `path`,
  // attached to `model`'s parameters. On error nothing changes.
  template <Module M>
  [[nodiscard]] absl::Status Load(const M& model, const std::string& path,
                                  const OptimizerLoadOptions& options = {});

  // --- Implementation details follow -----------------------------------------

  // A ParamGroup with its compiled pattern.
  struct Group {
    ParamGroup spec;
    std::regex regex;
  };

  // One parameter's state: its own step count (PyTorch's state['step']), its
  // group (index into groups_, groups_.size() for the default) and the
  // tensors the rule's StateNames() name.
  struct ParamState {
    int64_t step = 0;
    size_t group = 0;
    std::vector<TensorBase> tensors;
  };

 private:
  Optimizer() = default;

  // Index of the group of `path` in `groups`.
  static size_t GroupOf(const std::vector<Group>& groups,
                        std::string_view path);
  double GroupLr(size_t group) const;
  double GroupWeightDecay(size_t group) const;

  // PrepareStep() validates the items, marks duplicates, makes read-only
  // values writable (marking them replaced) and creates missing states.
  // Nothing changes unless it returns OK.
  [[nodiscard]] absl::Status PrepareStep(
      std::vector<optim_internal::StepItem>& items);
  // FollowDevice() moves `state`'s tensors to `device`, the device its
  // parameter now lives on (a model moved after its first steps, or state
  // loaded onto another device), so the fused update gets one device.
  static void FollowDevice(ParamState& state, const Device& device);
  // FollowLayout() gives `state`'s tensors `value`'s strides (a state loaded
  // contiguous for a parameter that is a transposed view), so that both step
  // in one storage order.
  static void FollowLayout(ParamState& state, const TensorBase& value);
  // ApplyStep() runs the update kernel for each non-duplicate item.
  void ApplyStep(const std::vector<optim_internal::StepItem>& items);
  void UpdateOne(const optim_internal::StepItem& item, ParamState& state);

  [[nodiscard]] absl::Status SaveState(
      const std::vector<std::pair<std::string, ParamId>>& params,
      const std::string& path) const;
  [[nodiscard]] absl::Status LoadState(
      const std::vector<optim_internal::LoadTarget>& targets,
      const std::string& path, const OptimizerLoadOptions& options);

  std::shared_ptr<const UpdateRule> rule_;
  std::vector<Group> groups_;
  LrSchedule schedule_ = LrSchedule::Constant();
  int64_t step_count_ = 0;
  absl::flat_hash_map<ParamId, ParamState> states_;
};

namespace optim_internal {

// ForEachTensorParam() calls fn(path, param) for every Param<Tensor<...>>.
template <class M, class Fn>
void ForEachTensorParam(M& model, Fn&& fn) {
  ForEachLeaf(model, [&](std::string_view path, auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (module_internal::TensorParamTraits<Leaf>::value) {
      fn(path, leaf);
    }
  });
}

}  // namespace optim_internal

template <Module M>
absl::Status Optimizer::Step(M& model, const Gradients& grads) {
  std::vector<optim_internal::StepItem> items;
  optim_internal::ForEachTensorParam(
      model, [&](std::string_view path, const auto& param) {
        if (!param.lazy_is_require_grad()) return;
        std::optional<TensorBase> grad = grads.Get(param.id());
        if (!grad.has_value()) return;
        items.push_back({std::string(path), param.id(), param.val().base(),
                         *std::move(grad)});
      });
  KINDLING_RETURN_IF_ERROR(PrepareStep(items));

  // Parameters that needed a writable copy take it, tied fields together.
  bool any_replaced = false;
  for (const auto& item : items) any_replaced |= item.replaced;
  if (any_replaced) {
    absl::flat_hash_map<ParamId, const TensorBase*> copies;
    for (const auto& item : items) {
      if (item.replaced) copies[item.id] = &item.value;
    }
    absl::flat_hash_map<ParamId, std::any> assigned;
    optim_internal::ForEachTensorParam(
        model, [&](std::string_view, auto& param) {
          using P = std::remove_cvref_t<decltype(param)>;
          auto copy = copies.find(param.id());
          if (copy == copies.end()) return;
          if (auto it = assigned.find(param.id()); it != assigned.end()) {
            if (const P* first = std::any_cast<P>(&it->second)) {
              param = *first;
              return;
            }
          }
          using T = std::remove_cvref_t<decltype(param.val())>;
          param = param.with_value(
              T(copy->second->set_require_grad(param.lazy_is_require_grad())));
          assigned.emplace(param.id(), param);
        });
  }
  ApplyStep(items);
  return absl::OkStatus();
}

template <Module M>
absl::Status Optimizer::Save(const M& model, const std::string& path) const {
  std::vector<std::pair<std::string, ParamId>> params;
  optim_internal::ForEachTensorParam(
      model, [&](std::string_view param_path, const auto& param) {
        params.emplace_back(std::string(param_path), param.id());
      });
  return SaveState(params, path);
}

template <Module M>
absl::Status Optimizer::Load(const M& model, const std::string& path,
                             const OptimizerLoadOptions& options) {
  std::vector<optim_internal::LoadTarget> targets;
  optim_internal::ForEachTensorParam(model, [&](std::string_view param_path,
                                                const auto& param) {
    using T = std::remove_cvref_t<decltype(param.val())>;
    const DType dtype =
        param.is_initialized() ? param.val().dtype() : T::Kind::kDefaultDType;
    targets.push_back({std::string(param_path), param.id(),
                       Shape(param.lazy_shape()), dtype, param.lazy_device()});
  });
  return LoadState(targets, path, options);
}

}  // namespace kindling

#endif  // KINDLING_OPTIM_OPTIMIZER_H_
