// Optimizer construction and stepping (save/load are in optimizer_io.cc).
#include "kindling/optim/optimizer.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/dtype.h"

namespace kindling {

using optim_internal::StepItem;

std::string_view OptimizerTypeName(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return "sgd";
    case OptimizerType::kAdam:
      return "adam";
    case OptimizerType::kAdamW:
      return "adamw";
  }
  return "unknown";
}

namespace {

// CheckRange() appends a message when `value` is outside [low, high) (or
// [low, inf) when high is nullopt).
void CheckRange(std::vector<std::string>& errors, const char* name,
                double value, double low, std::optional<double> high) {
  if (value >= low && (!high.has_value() || value < *high)) return;
  errors.push_back(high.has_value()
                       ? absl::StrCat(name, " ", value, " must be in [", low,
                                      ", ", *high, ")")
                       : absl::StrCat(name, " ", value, " must be >= ", low));
}

}  // namespace

absl::StatusOr<Optimizer> Optimizer::Create(Hyper hyper,
                                            std::vector<ParamGroup> groups) {
  std::vector<std::string> errors;
  CheckRange(errors, "lr", hyper.lr, 0, std::nullopt);
  CheckRange(errors, "weight_decay", hyper.weight_decay, 0, std::nullopt);
  if (hyper.type == OptimizerType::kSgd) {
    CheckRange(errors, "momentum", hyper.momentum, 0, std::nullopt);
    if (hyper.nesterov && (hyper.momentum <= 0 || hyper.dampening != 0)) {
      errors.push_back(
          "nesterov requires momentum > 0 and dampening == 0 (PyTorch's rule)");
    }
  } else {
    CheckRange(errors, "betas[0]", hyper.beta1, 0, 1.0);
    CheckRange(errors, "betas[1]", hyper.beta2, 0, 1.0);
    CheckRange(errors, "eps", hyper.eps, 0, std::nullopt);
  }
  Optimizer optimizer;
  for (size_t i = 0; i < groups.size(); ++i) {
    ParamGroup& spec = groups[i];
    if (spec.lr.has_value()) {
      CheckRange(errors, "group lr", *spec.lr, 0, std::nullopt);
    }
    if (spec.weight_decay.has_value()) {
      CheckRange(errors, "group weight_decay", *spec.weight_decay, 0,
                 std::nullopt);
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
        absl::StrCat("Optimizer::", std::string(OptimizerTypeName(hyper.type)),
                     ": ", absl::StrJoin(errors, "; ")));
  }
  optimizer.hyper_ = hyper;
  return optimizer;
}

absl::StatusOr<Optimizer> Optimizer::Sgd(const SgdOptions& options,
                                         std::vector<ParamGroup> groups) {
  Hyper hyper;
  hyper.type = OptimizerType::kSgd;
  hyper.lr = options.lr;
  hyper.momentum = options.momentum;
  hyper.dampening = options.dampening;
  hyper.nesterov = options.nesterov;
  hyper.weight_decay = options.weight_decay;
  return Create(hyper, std::move(groups));
}

template <class AdamLikeOptions>
Optimizer::Hyper Optimizer::AdamHyper(OptimizerType type,
                                      const AdamLikeOptions& options) {
  Hyper hyper;
  hyper.type = type;
  hyper.lr = options.lr;
  hyper.beta1 = options.betas.first;
  hyper.beta2 = options.betas.second;
  hyper.eps = options.eps;
  hyper.weight_decay = options.weight_decay;
  hyper.amsgrad = options.amsgrad;
  return hyper;
}

absl::StatusOr<Optimizer> Optimizer::Adam(const AdamOptions& options,
                                          std::vector<ParamGroup> groups) {
  return Create(AdamHyper(OptimizerType::kAdam, options), std::move(groups));
}

absl::StatusOr<Optimizer> Optimizer::AdamW(const AdamWOptions& options,
                                           std::vector<ParamGroup> groups) {
  return Create(AdamHyper(OptimizerType::kAdamW, options), std::move(groups));
}

std::vector<std::string_view> Optimizer::StateNames(const Hyper& hyper) {
  if (hyper.type == OptimizerType::kSgd) {
    if (hyper.momentum == 0) return {};
    return {"momentum_buffer"};
  }
  if (hyper.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
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
  return hyper_.lr;
}

double Optimizer::GroupWeightDecay(size_t group) const {
  if (group < groups_.size() && groups_[group].spec.weight_decay.has_value()) {
    return *groups_[group].spec.weight_decay;
  }
  return hyper_.weight_decay;
}

double Optimizer::LearningRate(std::string_view path) const {
  return schedule_.LearningRate(GroupLr(GroupOf(groups_, path)), step_count_);
}

const TensorBase* Optimizer::state_tensor(ParamId id,
                                          std::string_view name) const {
  auto it = states_.find(id);
  if (it == states_.end()) return nullptr;
  const std::vector<std::string_view> names = StateNames(hyper_);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return &it->second.tensors[i];
  }
  return nullptr;
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
  const size_t state_count = StateNames(hyper_).size();
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
    } else if (!value.is_contiguous()) {
      errors.push_back(absl::StrCat(
          "parameter `", item.path, "` (", value.ToString(),
          ") is a strided view; the fused update needs contiguous storage"));
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
      continue;
    }
    ParamState state;
    state.group = GroupOf(groups_, item.path);
    for (size_t s = 0; s < state_count; ++s) {
      TensorBase tensor = TensorBase::Empty(
          item.value.shape(), item.value.dtype(), item.value.device());
      GetBackend(tensor.device()).Fill(tensor, 0.0);
      state.tensors[s] = std::move(tensor);
    }
    states_.emplace(item.id, std::move(state));
  }
  return absl::OkStatus();
}

void Optimizer::UpdateOne(const StepItem& item, ParamState& state) {
  state.step += 1;
  const double lr = schedule_.LearningRate(GroupLr(state.group), step_count_);
  const double weight_decay = GroupWeightDecay(state.group);
  // A strided gradient is packed once; the usual contiguous one is used as is.
  const TensorBase grad =
      item.grad.is_contiguous() ? item.grad : item.grad.Contiguous();
  Backend& backend = GetBackend(item.value.device());
  if (hyper_.type == OptimizerType::kSgd) {
    Backend::SgdUpdateScalars scalars;
    scalars.lr = lr;
    scalars.momentum = hyper_.momentum;
    scalars.dampening = hyper_.dampening;
    scalars.weight_decay = weight_decay;
    scalars.nesterov = hyper_.nesterov;
    scalars.first_step = state.step == 1;
    backend.SgdUpdate(item.value, grad, state.tensors[0], scalars);
    return;
  }
  const double step = static_cast<double>(state.step);
  Backend::AdamUpdateScalars scalars;
  scalars.lr = lr;
  scalars.beta1 = hyper_.beta1;
  scalars.beta2 = hyper_.beta2;
  scalars.eps = hyper_.eps;
  scalars.weight_decay = weight_decay;
  scalars.decoupled_weight_decay = hyper_.type == OptimizerType::kAdamW;
  scalars.amsgrad = hyper_.amsgrad;
  scalars.step_size = lr / (1 - std::pow(hyper_.beta1, step));
  scalars.bias_correction2_sqrt = std::sqrt(1 - std::pow(hyper_.beta2, step));
  backend.AdamUpdate(item.value, grad, state.tensors[0], state.tensors[1],
                     state.tensors[2], scalars);
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
