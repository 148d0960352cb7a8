// Optimizer construction and stepping (save/load are in optimizer_io.cc).
#include "kindling/optim/optimizer.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kindling/core/check.h"
#include "kindling/optim/rules.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/dtype.h"

namespace kindling {

using optim_internal::StepItem;

absl::StatusOr<Optimizer> Optimizer::FromRule(
    std::shared_ptr<const UpdateRule> rule, std::vector<ParamGroup> groups) {
  KINDLING_CHECK(rule != nullptr, "Optimizer::FromRule: null rule");
  std::vector<std::string> errors;
  rule->Validate(errors);
  Optimizer optimizer;
  for (size_t i = 0; i < groups.size(); ++i) {
    ParamGroup& spec = groups[i];
    if (spec.lr.has_value()) {
      CheckHyperRange(errors, "group lr", *spec.lr, 0);
    }
    if (spec.weight_decay.has_value()) {
      CheckHyperRange(errors, "group weight_decay", *spec.weight_decay, 0);
    }
    try {
      std::regex regex(spec.pattern, std::regex::ECMAScript);
      optimizer.groups_.push_back({std::move(spec), std::move(regex)});
    } catch (const std::regex_error& error) {
      errors.push_back(
          absl::StrCat("group ", i, " pattern `", spec.pattern,
                       "` is not a valid regular expression: ", error.what()));
    }
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Optimizer::", std::string(rule->name()), ": ",
                     absl::StrJoin(errors, "; ")));
  }
  optimizer.rule_ = std::move(rule);
  return optimizer;
}

absl::StatusOr<Optimizer> Optimizer::Sgd(const SgdOptions& options,
                                         std::vector<ParamGroup> groups) {
  return FromRule(SgdRule(options), std::move(groups));
}

absl::StatusOr<Optimizer> Optimizer::Adam(const AdamOptions& options,
                                          std::vector<ParamGroup> groups) {
  return FromRule(AdamRule(options), std::move(groups));
}

absl::StatusOr<Optimizer> Optimizer::AdamW(const AdamWOptions& options,
                                           std::vector<ParamGroup> groups) {
  return FromRule(AdamWRule(options), std::move(groups));
}

absl::StatusOr<Optimizer> Optimizer::RmsProp(const RmsPropOptions& options,
                                             std::vector<ParamGroup> groups) {
  return FromRule(RmsPropRule(options), std::move(groups));
}

absl::StatusOr<Optimizer> Optimizer::Lion(const LionOptions& options,
                                          std::vector<ParamGroup> groups) {
  return FromRule(LionRule(options), std::move(groups));
}

size_t Optimizer::GroupOf(const std::vector<Group>& groups,
                          std::string_view path) {
  for (size_t i = 0; i < groups.size(); ++i) {
    if (std::regex_match(path.begin(), path.end(), groups[i].regex)) return i;
  }
  return groups.size();
}

double Optimizer::GroupLr(size_t group) const {
  if (group < groups_.size() && groups_[group].spec.lr.has_value()) {
    return *groups_[group].spec.lr;
  }
  return rule_->lr();
}

double Optimizer::GroupWeightDecay(size_t group) const {
  if (group < groups_.size() && groups_[group].spec.weight_decay.has_value()) {
    return *groups_[group].spec.weight_decay;
  }
  return rule_->weight_decay();
}

double Optimizer::LearningRate(std::string_view path) const {
  return schedule_.LearningRate(GroupLr(GroupOf(groups_, path)), step_count_);
}

const TensorBase* Optimizer::state_tensor(ParamId id,
                                          std::string_view name) const {
  auto it = states_.find(id);
  if (it == states_.end()) return nullptr;
  const std::vector<std::string_view> names = rule_->StateNames();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return &it->second.tensors[i];
  }
  return nullptr;
}

namespace {

// StorageOrder() is the order of `value`'s axes in memory, outermost first,
// when `value` is a permutation of a contiguous tensor (a PyTorch-layout
// Linear weight loaded as a transposed view of the file, module_file.h), so
// that value.Permute(order) is contiguous; nullopt when its strides leave
// gaps or overlap.
std::optional<std::vector<int>> StorageOrder(const TensorBase& value) {
  std::vector<int> order(value.rank());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return value.strides()[a] > value.strides()[b];
  });
  if (!value.Permute(order).is_contiguous()) return std::nullopt;
  return order;
}

// ZerosLike() is a zero tensor with `value`'s shape, dtype, device and
// layout (strides), so a state steps element for element with its
// parameter's storage.
TensorBase ZerosLike(const TensorBase& value) {
  const std::vector<int> order = StorageOrder(value).value();
  std::vector<int64_t> dims(order.size());
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    dims[i] = value.shape()[order[i]];
    inverse[order[i]] = static_cast<int>(i);
  }
  TensorBase zeros = TensorBase::Empty(Shape{std::span<const int64_t>(dims)},
                                       value.dtype(), value.device());
  GetBackend(zeros.device()).Fill(zeros, 0.0);
  return zeros.Permute(inverse);
}

}  // namespace

void Optimizer::FollowLayout(ParamState& state, const TensorBase& value) {
  for (TensorBase& tensor : state.tensors) {
    if (tensor.defined() && tensor.strides() != value.strides()) {
      TensorBase relaid = ZerosLike(value);
      GetBackend(relaid.device()).Copy(relaid, tensor);
      tensor = std::move(relaid);
    }
  }
}

void Optimizer::FollowDevice(ParamState& state, const Device& device) {
  for (TensorBase& tensor : state.tensors) {
    if (tensor.defined() && tensor.device() != device) {
      tensor = tensor.ToDevice(device);
    }
  }
}

absl::Status Optimizer::PrepareStep(std::vector<StepItem>& items) {
  std::vector<std::string> errors;
  absl::flat_hash_map<ParamId, size_t> first_field;
  const size_t state_count = rule_->StateNames().size();
  for (size_t i = 0; i < items.size(); ++i) {
    StepItem& item = items[i];
    auto [it, inserted] = first_field.try_emplace(item.id, i);
    if (!inserted) {
      const StepItem& first = items[it->second];
      if (first.value.storage() != item.value.storage() ||
          first.value.offset() != item.value.offset() ||
          first.value.shape() != item.value.shape()) {
        errors.push_back(absl::StrCat(
            "`", first.path, "` and `", item.path, "` share ParamId ",
            item.id.ToString(), " but hold different tensors (",
            first.value.ToString(), " and ", item.value.ToString(),
            "); one optimizer state cannot follow both: tie them (copy one "
            "Param) or give one a new id"));
      }
      item.duplicate = true;
      continue;
    }
    const TensorBase& value = item.value;
    const TensorBase& grad = item.grad;
    if (!IsFloatingDType(value.dtype())) {
      errors.push_back(absl::StrCat("parameter `", item.path, "` is ",
                                    value.ToString(),
                                    "; only floating-point parameters train"));
    } else if (!grad.defined() || grad.dtype() != value.dtype() ||
               grad.shape() != value.shape() ||
               grad.device() != value.device()) {
      errors.push_back(absl::StrCat("the gradient of `", item.path, "` is ",
                                    grad.ToString(), " but the parameter is ",
                                    value.ToString()));
    } else if (!value.is_contiguous() && !StorageOrder(value).has_value()) {
      errors.push_back(absl::StrCat(
          "parameter `", item.path, "` (", value.ToString(),
          ") is a strided view with gaps or overlaps; the fused update needs "
          "dense storage"));
    } else if (auto state = states_.find(item.id); state != states_.end()) {
      for (size_t s = 0; s < state_count; ++s) {
        const TensorBase& tensor = state->second.tensors[s];
        if (tensor.shape() != value.shape() ||
            tensor.dtype() != value.dtype()) {
          errors.push_back(absl::StrCat(
              "the optimizer state of `", item.path, "` is ", tensor.ToString(),
              " but the parameter is now ", value.ToString()));
          break;
        }
      }
    }
  }
  if (!errors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Optimizer::Step: ", absl::StrJoin(errors, "; ")));
  }
  for (StepItem& item : items) {
    if (item.duplicate) continue;
    if (item.value.storage()->is_read_only()) {
      item.value.MakeWritable();
      item.replaced = true;
    }
    if (auto found = states_.find(item.id); found != states_.end()) {
      FollowDevice(found->second, item.value.device());
      FollowLayout(found->second, item.value);
      continue;
    }
    ParamState state;
    state.group = GroupOf(groups_, item.path);
    for (size_t s = 0; s < state_count; ++s) {
      state.tensors.push_back(ZerosLike(item.value));
    }
    states_.emplace(item.id, std::move(state));
  }
  return absl::OkStatus();
}

void Optimizer::UpdateOne(const StepItem& item, ParamState& state) {
  state.step += 1;
  UpdateContext context;
  context.lr = schedule_.LearningRate(GroupLr(state.group), step_count_);
  context.weight_decay = GroupWeightDecay(state.group);
  context.step = state.step;
  if (!item.value.is_contiguous()) {
    // A permuted parameter (and its states, which share its layout) steps
    // in storage order; the gradient is packed into that order once.
    const std::vector<int> order = StorageOrder(item.value).value();
    TensorBase param = item.value.Permute(order);
    const TensorBase grad = item.grad.Permute(order).Contiguous();
    std::vector<TensorBase> states;
    for (const TensorBase& tensor : state.tensors) {
      states.push_back(tensor.Permute(order));
    }
    rule_->Update(context, param, grad, std::span<TensorBase>(states));
    return;
  }
  // A strided gradient is packed once; the usual contiguous one is used as is.
  const TensorBase grad =
      item.grad.is_contiguous() ? item.grad : item.grad.Contiguous();
  TensorBase param = item.value;
  rule_->Update(context, param, grad, std::span<TensorBase>(state.tensors));
}

void Optimizer::ApplyStep(const std::vector<StepItem>& items) {
  for (const StepItem& item : items) {
    if (item.duplicate) continue;
    auto state = states_.find(item.id);
    KINDLING_CHECK(state != states_.end(),
                   "Optimizer: no state for `%s` after PrepareStep", item.path);
    UpdateOne(item, state->second);
  }
  ++step_count_;
}

}  // namespace kindling
