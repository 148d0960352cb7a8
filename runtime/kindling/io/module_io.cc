#include "kindling/io/module_io.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <numeric>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/convert.h"
#include "kindling/io/device_read.h"
#include "kindling/io/json.h"
#include "kindling/io/strings.h"

namespace kindling::io {
namespace {

// ListsType(): `types` names `owner_type` exactly, or names its template
// without arguments ("kindling::nn::BatchNorm" lists every
// "kindling::nn::BatchNorm<R>").
bool ListsType(const std::vector<std::string>& types,
               std::string_view owner_type) {
  const std::string_view template_name =
      owner_type.substr(0, owner_type.find('<'));
  return std::any_of(types.begin(), types.end(), [&](const std::string& type) {
    return type == owner_type || type == template_name;
  });
}

// The last dotted component of a path, and everything before it.
std::string_view LastComponent(std::string_view path) {
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? path : path.substr(dot + 1);
}
std::string WithLastComponent(std::string_view path, std::string_view last) {
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos) return std::string(last);
  return Cat(path.substr(0, dot + 1), last);
}

// EditDistance(): the Levenshtein distance of a and b (insertions,
// deletions and substitutions of one character).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Closest(): the candidate nearest `key`, if within max(2, |key| / 4) edits
// (a typo, a renamed last component, a missing prefix), else "". The first
// of equally near candidates wins.
std::string Closest(const std::string& key,
                    const std::vector<std::string>& candidates) {
  const size_t limit = std::max<size_t>(2, key.size() / 4);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const size_t length_gap = candidate.size() > key.size()
                                  ? candidate.size() - key.size()
                                  : key.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    const size_t distance = EditDistance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

// The PyTorch name of a norm layer's parameter, or "" when it has none.
std::string_view PyTorchNormName(std::string_view kindling_name) {
  if (kindling_name == "gamma") return "weight";
  if (kindling_name == "beta") return "bias";
  return "";
}

// OpenShards(): the files of a sharded checkpoint, from its index (Hugging
// Face's model.safetensors.index.json: {"weight_map": {key: shard file}}),
// each shard opened once, relative to the index's directory. Every key the
// index lists must be in the shard it names, and no key in two shards.
absl::StatusOr<std::vector<std::shared_ptr<const TensorFile>>> OpenShards(
    const std::string& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat(index_path, ": cannot open"));
  const std::string text((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  absl::StatusOr<JsonValue> index = ParseJson(text);
  if (!index.ok()) {
    return absl::InvalidArgumentError(Cat(
        index_path, ": not a checkpoint index: ", index.status().message()));
  }
  const JsonValue* weight_map = index->kind == JsonValue::Kind::kObject
                                    ? index->Find("weight_map")
                                    : nullptr;
  if (weight_map == nullptr || weight_map->kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(
        Cat(index_path,
            ": no \"weight_map\" object: not a sharded "
            "checkpoint's index"));
  }
  const size_t slash = index_path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "" : index_path.substr(0, slash + 1);
  std::vector<std::shared_ptr<const TensorFile>> files;
  absl::flat_hash_map<std::string, size_t> shard_index;
  std::vector<std::string> errors;
  for (size_t i = 0; i < weight_map->keys.size(); ++i) {
    const std::string& key = weight_map->keys[i];
    const JsonValue& shard = weight_map->members[i];
    if (shard.kind != JsonValue::Kind::kString || shard.string.empty() ||
        shard.string.find('/') != std::string::npos) {
      errors.push_back(Cat("\"", key,
                           "\": the shard must be a file name in "
                           "the index's directory"));
      continue;
    }
    auto [it, inserted] = shard_index.try_emplace(shard.string, files.size());
    if (inserted) {
      absl::StatusOr<std::shared_ptr<const TensorFile>> file =
          TensorFile::Open(dir + shard.string);
      if (!file.ok()) return file.status();
      files.push_back(*std::move(file));
    }
    if (files[it->second]->header().Find(key) == nullptr) {
      errors.push_back(Cat("\"", key, "\" is listed in ", shard.string,
                           ", which does not hold it"));
    }
  }
  if (files.empty()) errors.push_back("the weight map lists no tensor");
  absl::flat_hash_map<std::string, std::string> first_shard;
  for (const auto& [shard, f] : shard_index) {
    for (const TensorInfo& info : files[f]->header().tensors()) {
      auto [it, inserted] = first_shard.try_emplace(info.name, shard);
      if (!inserted) {
        errors.push_back(
            Cat("\"", info.name, "\" is in both ", it->second, " and ", shard));
      }
    }
  }
  if (!errors.empty()) {
    std::sort(errors.begin(), errors.end());
    return absl::InvalidArgumentError(
        Cat(index_path, ": ", absl::StrJoin(errors, "; ")));
  }
  return files;
}

}  // namespace

absl::StatusOr<ModuleLoader> ModuleLoader::Open(const std::string& path,
                                                const LoadOptions& options) {
  std::vector<std::shared_ptr<const TensorFile>> files;
  if (absl::EndsWith(path, ".index.json")) {
    absl::StatusOr<std::vector<std::shared_ptr<const TensorFile>>> shards =
        OpenShards(path);
    if (!shards.ok()) return shards.status();
    files = *std::move(shards);
  } else {
    absl::StatusOr<std::shared_ptr<const TensorFile>> file =
        TensorFile::Open(path);
    if (!file.ok()) return file.status();
    files.push_back(*std::move(file));
  }
  ModuleLoader loader(path, std::move(files), options);
  // Kindling's own metadata is read from the first file (a sharded
  // checkpoint written elsewhere has none).
  const SafetensorsHeader& header = loader.files_[0]->header();

  if (const std::string* version = header.FindMetadata(kFormatVersionKey)) {
    int number = 0;
    if (!absl::SimpleAtoi(*version, &number) || number < 1) {
      return absl::InvalidArgumentError(Cat(path, ": metadata ",
                                            kFormatVersionKey, " \"", *version,
                                            "\" is not a version number"));
    }
    if (number > kFormatVersion) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: written by a newer Kindling (format version %d; this build "
          "reads up to %d)",
          path, number, kFormatVersion));
    }
  }
  if (const std::string* type = header.FindMetadata(kModuleTypeKey)) {
    loader.report_.file_module_type = *type;
  }

  std::vector<std::regex> rules;
  rules.reserve(options.key_remap.size());
  for (const KeyRemapRule& rule : options.key_remap) {
    try {
      rules.emplace_back(rule.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& error) {
      return absl::InvalidArgumentError(Cat("key remap pattern \"",
                                            rule.pattern,
                                            "\" is invalid: ", error.what()));
    }
  }
  std::vector<std::string> collisions;
  for (size_t f = 0; f < loader.files_.size(); ++f) {
    for (const TensorInfo& info : loader.files_[f]->header().tensors()) {
      loader.file_of_[&info] = f;
      std::string key = info.name;
      if (!options.strip_prefix.empty() &&
          absl::StartsWith(key, options.strip_prefix)) {
        key.erase(0, options.strip_prefix.size());
      }
      for (size_t i = 0; i < rules.size(); ++i) {
        key =
            std::regex_replace(key, rules[i], options.key_remap[i].replacement);
      }
      if (key.empty()) {
        loader.report_.skipped.push_back(info.name);
        continue;
      }
      auto [it, inserted] = loader.by_key_.emplace(key, &info);
      if (!inserted) {
        collisions.push_back(Cat("\"", it->second->name, "\" and \"", info.name,
                                 "\" both map to \"", key, "\""));
      }
      loader.used_[&info] = false;
    }
  }
  if (!collisions.empty()) {
    return absl::InvalidArgumentError(
        Cat(path,
            ": key remapping is ambiguous: ", absl::StrJoin(collisions, "; ")));
  }
  return loader;
}

int ModuleLoader::Plan(const LeafQuery& leaf) {
  const std::string_view name = LastComponent(leaf.path);
  const bool pytorch = options_.pytorch.has_value();
  const bool transpose =
      pytorch && ListsType(options_.pytorch->linear_types, leaf.owner_type) &&
      name == "weight" && leaf.rank == 2;

  const TensorInfo* info = nullptr;
  // The key the file should hold, in its convention: PyTorch's name for a
  // norm layer's parameter when the adapter is on.
  std::string file_key(leaf.path);
  if (auto it = by_key_.find(ToAbsl(leaf.path)); it != by_key_.end()) {
    info = it->second;
  } else if (pytorch &&
             ListsType(options_.pytorch->norm_types, leaf.owner_type) &&
             !PyTorchNormName(name).empty()) {
    file_key = WithLastComponent(leaf.path, PyTorchNormName(name));
    if (auto alias_it = by_key_.find(file_key); alias_it != by_key_.end()) {
      info = alias_it->second;
    }
  }
  if (info == nullptr) {
    report_.missing.emplace_back(leaf.path);
    missing_file_keys_.push_back(std::move(file_key));
    return -1;
  }
  used_[info] = true;

  // How to name it in messages: the module path, plus the file key if the
  // two differ.
  const std::string label =
      info->name == leaf.path
          ? Cat("\"", leaf.path, "\"")
          : Cat("\"", leaf.path, "\" (file key \"", info->name, "\")");
  Shape expected = leaf.shape;
  if (transpose && expected.rank() == 2) {
    expected = Shape{leaf.shape[1], leaf.shape[0]};
  }
  const Shape actual{std::span<const int64_t>(info->shape)};
  if (!(actual == expected)) {
    errors_.push_back(Cat(label, ": shape mismatch: the file has ",
                          actual.ToString(), ", the module expects ",
                          expected.ToString(),
                          transpose ? " (PyTorch [out, in] layout)" : ""));
    return -1;
  }
  if (!CanConvert(info->dtype, ToSafetensorsDType(leaf.dtype))) {
    errors_.push_back(Cat(label, ": stored as ",
                          SafetensorsDTypeName(info->dtype),
                          ", which cannot convert to ", DTypeName(leaf.dtype)));
    return -1;
  }
  std::optional<ParamId> id;
  if (options_.restore_param_ids) {
    const std::string id_key = Cat(kParamIdKeyPrefix, info->name);
    if (const std::string* text = FileOf(info)->header().FindMetadata(id_key)) {
      absl::StatusOr<ParamId> parsed = ParamId::Parse(*text);
      if (!parsed.ok()) {
        errors_.push_back(
            Cat(label, ": metadata ", id_key, ": ", parsed.status().message()));
        return -1;
      }
      id = *parsed;
    }
  }
  plans_.push_back(Planned{info, leaf.dtype, leaf.device, transpose, id});
  report_.applied.emplace_back(leaf.path);
  return static_cast<int>(plans_.size() - 1);
}

absl::Status ModuleLoader::Finish(std::string_view module_type) {
  std::vector<std::string> problems = errors_;
  // The unused file keys in file order, with the keys they were matched as
  // (after remapping).
  absl::flat_hash_map<const TensorInfo*, std::string> matched_as;
  for (const auto& [key, info] : by_key_) matched_as[info] = key;
  std::vector<std::string> unused_keys;
  for (const auto& file : files_) {
    for (const TensorInfo& info : file->header().tensors()) {
      auto it = used_.find(&info);
      if (it == used_.end() || it->second) continue;
      report_.unused.push_back(info.name);
      unused_keys.push_back(matched_as[&info]);
    }
  }
  if (!report_.missing.empty() && !options_.allow_partial) {
    problems.push_back(
        Cat("missing from the file: ", MissingList(unused_keys)));
  }
  if (!report_.unused.empty() && options_.strict) {
    problems.push_back(
        Cat("unexpected keys in the file: ", UnusedList(unused_keys)));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: cannot load into %s (%d %s): %s", path_, module_type,
      problems.size(), problems.size() == 1 ? "problem" : "problems",
      absl::StrJoin(problems, "; ")));
}

const std::shared_ptr<const TensorFile>& ModuleLoader::FileOf(
    const TensorInfo* info) const {
  return files_[file_of_.at(info)];
}

std::string ModuleLoader::MissingList(
    const std::vector<std::string>& unused_keys) const {
  std::vector<std::string> entries;
  for (size_t i = 0; i < report_.missing.size(); ++i) {
    const std::string& key = missing_file_keys_[i];
    std::string entry = Cat("\"", key, "\"");
    if (key != report_.missing[i]) {
      entry += Cat(" (for \"", report_.missing[i], "\")");
    }
    const std::string near = Closest(key, unused_keys);
    if (!near.empty()) entry += Cat(" (did you mean \"", near, "\"?)");
    entries.push_back(std::move(entry));
  }
  return absl::StrJoin(entries, ", ");
}

std::string ModuleLoader::UnusedList(
    const std::vector<std::string>& unused_keys) const {
  std::vector<std::string> entries;
  for (size_t i = 0; i < report_.unused.size(); ++i) {
    const std::string& key = unused_keys[i];
    std::string entry = Cat("\"", report_.unused[i], "\"");
    if (key != report_.unused[i]) entry += Cat(" (remapped to \"", key, "\")");
    const std::string near = Closest(key, report_.missing);
    if (!near.empty()) entry += Cat(" (closest missing leaf: \"", near, "\")");
    entries.push_back(std::move(entry));
  }
  return absl::StrJoin(entries, ", ");
}

void ModuleLoader::Count(const TensorBase& tensor, bool borrowed) {
  const int64_t bytes = tensor.numel() * tensor.element_size();
  if (borrowed) {
    ++report_.borrowed;
    report_.borrowed_bytes += bytes;
  } else {
    ++report_.copied;
    report_.copied_bytes += bytes;
  }
}

absl::StatusOr<TensorBase> ModuleLoader::Materialize(int plan) {
  const Planned& planned = plans_[plan];
  if (!planned.device.is_cpu()) return MaterializeOnDevice(planned);
  bool borrowed = false;
  absl::StatusOr<TensorBase> tensor =
      ReadTensor(FileOf(planned.info), *planned.info, planned.dtype,
                 planned.device, &borrowed);
  if (!tensor.ok()) return tensor.status();
  // PyTorch's [out, in] weight becomes the module's [in, out] as a
  // transposed view: still borrowed from the file, and matmul hands it to
  // BLAS with its transpose flag, so it is never copied.
  if (planned.transpose) *tensor = tensor->Transpose(0, 1);
  Count(*tensor, borrowed);
  return tensor;
}

absl::StatusOr<TensorBase> ModuleLoader::MaterializeOnDevice(
    const Planned& planned) {
  absl::StatusOr<TensorBase> tensor =
      ReadTensorToDevice(FileOf(planned.info), *planned.info, planned.dtype,
                         planned.device, options_.device_staging_bytes);
  if (!tensor.ok()) return tensor.status();
  // PyTorch's [out, in] weight is transposed on the device, not the host.
  if (planned.transpose) *tensor = tensor->Transpose(0, 1).Contiguous();
  Count(*tensor, /*borrowed=*/false);
  return tensor;
}

void ModuleSaver::Add(std::string_view path, std::string_view owner_type,
                      const TensorBase& value, ParamId id) {
  Entry entry;
  entry.spec.name = std::string(path);
  entry.value = value;
  entry.id = id;
  if (options_.pytorch.has_value()) {
    const std::string_view name = LastComponent(path);
    if (ListsType(options_.pytorch->linear_types, owner_type) &&
        name == "weight" && value.rank() == 2) {
      entry.value = value.Transpose(0, 1);  // a view; copied when written
    }
    if (ListsType(options_.pytorch->norm_types, owner_type) &&
        !PyTorchNormName(name).empty()) {
      entry.spec.name = WithLastComponent(path, PyTorchNormName(name));
    }
  }
  entry.spec.name.insert(0, options_.key_prefix);
  const DType dtype = entry.value.dtype();
  if (IsFloatingDType(dtype)) {
    switch (options_.precision) {
      case Precision::kF32:
        entry.spec.dtype = SafetensorsDType::kF32;
        break;
      case Precision::kF16:
        entry.spec.dtype = SafetensorsDType::kF16;
        break;
      case Precision::kBF16:
        entry.spec.dtype = SafetensorsDType::kBF16;
        break;
    }
  } else {
    entry.spec.dtype = ToSafetensorsDType(dtype);
  }
  const Shape& shape = entry.value.shape();
  entry.spec.shape.assign(shape.begin(), shape.end());
  entries_.push_back(std::move(entry));
}

absl::Status ModuleSaver::Write(const std::string& path,
                                std::string_view module_type) {
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"},
      {std::string(kFormatVersionKey), Cat(kFormatVersion)},
      {std::string(kModuleTypeKey), std::string(module_type)},
      {std::string(kPrecisionKey),
       std::string(PrecisionName(options_.precision))},
  };
  if (options_.pytorch.has_value()) {
    metadata.emplace_back(std::string(kLayoutKey), "pytorch");
  }
  for (const auto& [key, value] : options_.metadata) {
    if (absl::StartsWith(key, "kindling.") || key == "format") {
      return absl::InvalidArgumentError(
          Cat(path, ": metadata key \"", key, "\" is reserved for Kindling"));
    }
    metadata.emplace_back(key, value);
  }
  // Data order: by alignment, then name (as the reference writer does).
  std::vector<TensorSpec> specs;
  specs.reserve(entries_.size());
  absl::flat_hash_map<std::string, size_t> entry_of;
  for (size_t i = 0; i < entries_.size(); ++i) {
    specs.push_back(entries_[i].spec);
    entry_of.emplace(entries_[i].spec.name, i);
  }
  SortForAlignment(specs);
  std::vector<size_t> order;
  order.reserve(specs.size());
  for (const TensorSpec& spec : specs) {
    const size_t index = entry_of.at(spec.name);
    order.push_back(index);
    metadata.emplace_back(Cat(kParamIdKeyPrefix, spec.name),
                          entries_[index].id.ToString());
  }
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header =
      EncodeSafetensorsHeader(specs, metadata, &data_size);
  if (!header.ok()) {
    return absl::InvalidArgumentError(
        Cat(path, ": ", header.status().message()));
  }
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  KINDLING_RETURN_IF_ERROR(file->Write(*header));
  for (size_t index : order) {
    KINDLING_RETURN_IF_ERROR(WriteTensorData(*file, entries_[index].value,
                                             entries_[index].spec.dtype));
  }
  return file->Commit();
}

}  // namespace kindling::io
