// Optimizer::SaveState / LoadState: the optimizer state as a safetensors
// record (see optimizer.h for the format and the loading rules).
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"
#include "kindling/optim/optimizer.h"

namespace kindling {
namespace {

using optim_internal::LoadTarget;

// Metadata keys. Per-parameter keys end with the parameter's saved path.
constexpr char kFormatVersionKey[] = "kindling.optim.format_version";
constexpr char kFormatVersion[] = "1";
constexpr char kTypeKey[] = "kindling.optim.type";
constexpr char kStepCountKey[] = "kindling.optim.step_count";
constexpr char kGroupCountKey[] = "kindling.optim.groups";
constexpr char kParamIdPrefix[] = "kindling.optim.param_id.";
constexpr char kParamStepPrefix[] = "kindling.optim.param_step.";

std::string HyperKey(std::string_view name) {
  return absl::StrCat("kindling.optim.", std::string(name));
}
std::string GroupKey(size_t group, std::string_view name) {
  return absl::StrCat("kindling.optim.group.", group, ".", std::string(name));
}

// FormatDouble() prints the shortest text that reads back to the same bits.
std::string FormatDouble(double value) {
  return absl::StrFormat("%.17g", value);
}

// MetadataReader: typed reads of a header's metadata that collect errors.
class MetadataReader {
 public:
  MetadataReader(const io::SafetensorsHeader& header,
                 std::vector<std::string>& errors)
      : header_(header), errors_(errors) {}

  const std::string* Text(std::string_view key) {
    const std::string* value = header_.FindMetadata(key);
    if (value == nullptr)
      errors_.push_back(absl::StrCat("missing `", std::string(key), "`"));
    return value;
  }
  std::optional<double> OptionalDouble(std::string_view key) {
    const std::string* text = Text(key);
    if (text == nullptr || text->empty()) return std::nullopt;
    double value = 0;
    if (!absl::SimpleAtod(*text, &value)) {
      errors_.push_back(absl::StrCat("`", std::string(key), "` = `", *text,
                                     "` is not a number"));
    }
    return value;
  }
  int64_t Int(std::string_view key) {
    int64_t value = 0;
    const std::string* text = Text(key);
    if (text != nullptr && (!absl::SimpleAtoi(*text, &value) || value < 0)) {
      errors_.push_back(absl::StrCat("`", std::string(key), "` = `", *text,
                                     "` is not a count"));
    }
    return value;
  }

 private:
  const io::SafetensorsHeader& header_;
  std::vector<std::string>& errors_;
};

std::vector<int64_t> Dims(const Shape& shape) {
  return std::vector<int64_t>(shape.begin(), shape.end());
}

// RemapPath() applies the rules in order (regex_replace each).
std::string RemapPath(std::string path,
                      const std::vector<KeyRemapRule>& rules) {
  for (const KeyRemapRule& rule : rules) {
    path = std::regex_replace(path, std::regex(rule.pattern), rule.replacement);
  }
  return path;
}

}  // namespace

absl::Status Optimizer::SaveState(
    const std::vector<std::pair<std::string, ParamId>>& params,
    const std::string& path) const {
  std::vector<std::pair<std::string, std::string>> metadata = {
      {kFormatVersionKey, kFormatVersion},
      {kTypeKey, std::string(rule_->name())},
      {kStepCountKey, absl::StrCat(step_count_)},
      {kGroupCountKey, absl::StrCat(groups_.size())},
  };
  HyperWriter hyper;
  rule_->WriteHyper(hyper);
  for (const auto& [name, text] : hyper.entries()) {
    metadata.emplace_back(HyperKey(name), text);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& spec = groups_[g].spec;
    metadata.emplace_back(GroupKey(g, "pattern"), spec.pattern);
    metadata.emplace_back(GroupKey(g, "lr"),
                          spec.lr ? FormatDouble(*spec.lr) : "");
    metadata.emplace_back(
        GroupKey(g, "weight_decay"),
        spec.weight_decay ? FormatDouble(*spec.weight_decay) : "");
  }
  // One entry per stepped parameter, under its first path (tied fields share
  // one state).
  const std::vector<std::string_view> names = rule_->StateNames();
  std::vector<io::TensorSpec> specs;
  absl::flat_hash_map<std::string, const TensorBase*> tensors;
  absl::flat_hash_set<ParamId> saved;
  for (const auto& [param_path, id] : params) {
    auto state = states_.find(id);
    if (state == states_.end() || !saved.insert(id).second) continue;
    metadata.emplace_back(absl::StrCat(kParamIdPrefix, param_path),
                          id.ToString());
    metadata.emplace_back(absl::StrCat(kParamStepPrefix, param_path),
                          absl::StrCat(state->second.step));
    for (size_t s = 0; s < names.size(); ++s) {
      const TensorBase& tensor = state->second.tensors[s];
      std::string key = absl::StrCat(param_path, ".", std::string(names[s]));
      specs.push_back(
          {key, io::ToSafetensorsDType(tensor.dtype()), Dims(tensor.shape())});
      tensors.emplace(std::move(key), &tensor);
    }
  }
  io::SortForAlignment(specs);
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header =
      io::EncodeSafetensorsHeader(specs, metadata, &data_size);
  if (!header.ok()) return header.status();
  absl::StatusOr<io::AtomicFile> file = io::AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  KINDLING_RETURN_IF_ERROR(file->Write(*header));
  for (const io::TensorSpec& spec : specs) {
    KINDLING_RETURN_IF_ERROR(
        io::WriteTensorData(*file, *tensors.at(spec.name), spec.dtype));
  }
  return file->Commit();
}

absl::Status Optimizer::LoadState(const std::vector<LoadTarget>& targets,
                                  const std::string& path,
                                  const OptimizerLoadOptions& options) {
  absl::StatusOr<std::shared_ptr<const io::TensorFile>> opened =
      io::TensorFile::Open(path);
  if (!opened.ok()) return opened.status();
  const std::shared_ptr<const io::TensorFile>& file = *opened;
  const io::SafetensorsHeader& header = file->header();
  const auto fail = [&](const std::vector<std::string>& errors) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Optimizer::Load: ", path, ": ", absl::StrJoin(errors, "; ")));
  };

  std::vector<std::string> errors;
  MetadataReader meta(header, errors);
  const std::string* version = header.FindMetadata(kFormatVersionKey);
  const std::string* type_name = header.FindMetadata(kTypeKey);
  if (version == nullptr || type_name == nullptr) {
    return fail({absl::StrCat("no `", kTypeKey, "` / `", kFormatVersionKey,
                              "` in the metadata: not an optimizer state "
                              "file")});
  }
  if (*version != kFormatVersion) {
    return fail({absl::StrCat("format version ", *version,
                              " is not supported (this build reads ",
                              kFormatVersion, ")")});
  }
  if (*type_name != rule_->name()) {
    return fail({absl::StrCat("the file holds `", *type_name,
                              "` state but this optimizer is `",
                              std::string(rule_->name()), "`")});
  }

  // Hyper-parameters and groups, as PyTorch's load_state_dict restores
  // param_groups. (Files from before update rules hold every rule's keys;
  // each rule reads its own.)
  HyperReader hyper([&](std::string_view name) {
    return header.FindMetadata(HyperKey(name));
  });
  std::shared_ptr<const UpdateRule> rule = rule_->ReadHyper(hyper);
  errors.insert(errors.end(), hyper.errors().begin(), hyper.errors().end());
  const int64_t step_count = meta.Int(kStepCountKey);
  // A sane bound, so that a corrupt count cannot allocate without limit.
  constexpr int64_t kMaxGroups = 4096;
  const int64_t group_count = meta.Int(kGroupCountKey);
  if (group_count > kMaxGroups) {
    return fail({absl::StrCat("`", kGroupCountKey, "` = ", group_count,
                              " exceeds ", kMaxGroups)});
  }
  std::vector<ParamGroup> group_specs(group_count);
  for (size_t g = 0; g < group_specs.size(); ++g) {
    if (const std::string* pattern = meta.Text(GroupKey(g, "pattern"))) {
      group_specs[g].pattern = *pattern;
    }
    group_specs[g].lr = meta.OptionalDouble(GroupKey(g, "lr"));
    group_specs[g].weight_decay =
        meta.OptionalDouble(GroupKey(g, "weight_decay"));
  }
  if (!errors.empty()) return fail(errors);
  absl::StatusOr<Optimizer> restored =
      FromRule(std::move(rule), std::move(group_specs));
  if (!restored.ok()) {
    return fail({std::string(restored.status().message())});
  }

  // Match each saved parameter to a model parameter: by id, then by path.
  absl::flat_hash_map<ParamId, const LoadTarget*> by_id;
  absl::flat_hash_map<std::string_view, const LoadTarget*> by_path;
  for (const LoadTarget& target : targets) {
    by_id.try_emplace(target.id, &target);
    by_path.try_emplace(target.path, &target);
  }
  struct Planned {
    const LoadTarget* target;
    int64_t step;
    std::vector<const io::TensorInfo*> infos;
  };
  std::vector<Planned> plans;
  absl::flat_hash_set<std::string> used_keys;
  absl::flat_hash_set<ParamId> matched;
  const std::vector<std::string_view> names = restored->rule_->StateNames();
  for (const auto& [key, value] : header.metadata()) {
    if (!absl::StartsWith(key, kParamIdPrefix)) continue;
    const std::string saved_path =
        key.substr(std::string_view(kParamIdPrefix).size());
    absl::StatusOr<ParamId> id = ParamId::Parse(value);
    if (!id.ok()) {
      errors.push_back(absl::StrCat("`", key, "`: ", id.status().message()));
      continue;
    }
    const LoadTarget* target = nullptr;
    if (auto it = by_id.find(*id); it != by_id.end()) {
      target = it->second;
    } else {
      const std::string remapped = RemapPath(saved_path, options.key_remap);
      if (auto it = by_path.find(remapped); it != by_path.end()) {
        target = it->second;
      } else {
        errors.push_back(absl::StrCat(
            "the state of `", saved_path, "` (param id ", value,
            ") matches no parameter of the model, by id or by path `", remapped,
            "`"));
        continue;
      }
    }
    if (!matched.insert(target->id).second) {
      errors.push_back(absl::StrCat("two saved states match parameter `",
                                    target->path, "` (the second is `",
                                    saved_path, "`)"));
      continue;
    }
    Planned plan{
        target, meta.Int(absl::StrCat(kParamStepPrefix, saved_path)), {}};
    for (std::string_view name : names) {
      const std::string tensor_key =
          absl::StrCat(saved_path, ".", std::string(name));
      const io::TensorInfo* info = header.Find(tensor_key);
      if (info == nullptr) {
        errors.push_back(absl::StrCat("missing tensor `", tensor_key, "`"));
        continue;
      }
      used_keys.insert(tensor_key);
      const std::optional<DType> dtype = io::FromSafetensorsDType(info->dtype);
      const Shape shape{std::span<const int64_t>(info->shape)};
      if (dtype != target->dtype || shape != target->shape) {
        errors.push_back(absl::StrCat(
            "`", tensor_key, "` is ",
            std::string(io::SafetensorsDTypeName(info->dtype)),
            shape.ToString(), " but parameter `", target->path, "` is ",
            std::string(DTypeName(target->dtype)), target->shape.ToString()));
      }
      plan.infos.push_back(info);
    }
    plans.push_back(std::move(plan));
  }
  for (const io::TensorInfo& info : header.tensors()) {
    if (!used_keys.contains(info.name)) {
      errors.push_back(absl::StrCat("unexpected tensor `", info.name, "`"));
    }
  }
  if (!errors.empty()) return fail(errors);

  // Everything matches: read the tensors, then commit.
  absl::flat_hash_map<ParamId, ParamState> states;
  for (const Planned& plan : plans) {
    ParamState state;
    state.step = plan.step;
    state.group = GroupOf(restored->groups_, plan.target->path);
    for (size_t s = 0; s < plan.infos.size(); ++s) {
      absl::StatusOr<TensorBase> tensor = io::ReadTensor(
          file, *plan.infos[s], plan.target->dtype, plan.target->device);
      if (!tensor.ok()) return tensor.status();
      tensor->MakeWritable();
      state.tensors.push_back(*std::move(tensor));
    }
    states.emplace(plan.target->id, std::move(state));
  }
  rule_ = restored->rule_;
  groups_ = std::move(restored->groups_);
  step_count_ = step_count;
  states_ = std::move(states);
  return absl::OkStatus();
}

}  // namespace kindling
