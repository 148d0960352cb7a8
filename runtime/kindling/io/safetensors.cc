#include "kindling/io/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kindling/io/json.h"
#include "kindling/io/strings.h"

namespace kindling::io {
namespace {

struct DTypeEntry {
  SafetensorsDType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {SafetensorsDType::kBool, "BOOL", 1},
    {SafetensorsDType::kU8, "U8", 1},
    {SafetensorsDType::kI8, "I8", 1},
    {SafetensorsDType::kU16, "U16", 2},
    {SafetensorsDType::kI16, "I16", 2},
    {SafetensorsDType::kF16, "F16", 2},
    {SafetensorsDType::kBF16, "BF16", 2},
    {SafetensorsDType::kU32, "U32", 4},
    {SafetensorsDType::kI32, "I32", 4},
    {SafetensorsDType::kF32, "F32", 4},
    {SafetensorsDType::kU64, "U64", 8},
    {SafetensorsDType::kI64, "I64", 8},
    {SafetensorsDType::kF64, "F64", 8},
    {SafetensorsDType::kF8E4M3, "F8_E4M3", 1},
    {SafetensorsDType::kF8E5M2, "F8_E5M2", 1},
};

constexpr std::string_view kMetadataKey = "__metadata__";

// Quotes a key for a message, escaping what a terminal should not see.
std::string Quoted(std::string_view key) {
  std::string out;
  AppendJsonString(out, key.size() > 200 ? key.substr(0, 200) : key);
  if (key.size() > 200) out.insert(out.size() - 1, "...");
  return out;
}

[[nodiscard]] absl::Status FileError(std::string_view file,
                                     std::string_view problem) {
  return absl::InvalidArgumentError(Cat(file, ": ", problem));
}

[[nodiscard]] absl::Status TensorError(std::string_view file,
                                       std::string_view key,
                                       std::string_view problem) {
  return absl::InvalidArgumentError(
      Cat(file, ": tensor ", Quoted(key), ": ", problem));
}

// Reads a non-negative JSON integer that fits in int64.
bool AsNonNegative(const JsonValue& value, uint64_t limit, uint64_t* out) {
  if (value.kind != JsonValue::Kind::kInteger) return false;
  if (value.negative && value.integer != 0) return false;
  if (value.integer > limit) return false;
  *out = value.integer;
  return true;
}

[[nodiscard]] absl::StatusOr<TensorInfo> ParseTensor(std::string_view file,
                                                     const std::string& key,
                                                     const JsonValue& value) {
  if (value.kind != JsonValue::Kind::kObject) {
    return TensorError(file, key,
                       Cat("expected an object, got ", KindName(value.kind)));
  }
  TensorInfo info;
  info.name = key;
  const JsonValue* dtype = nullptr;
  const JsonValue* shape = nullptr;
  const JsonValue* offsets = nullptr;
  for (size_t i = 0; i < value.keys.size(); ++i) {
    const std::string& field = value.keys[i];
    const JsonValue& member = value.members[i];
    if (field == "dtype") {
      dtype = &member;
    } else if (field == "shape") {
      shape = &member;
    } else if (field == "data_offsets") {
      offsets = &member;
    } else {
      return TensorError(file, key, Cat("unknown field ", Quoted(field)));
    }
  }
  if (dtype == nullptr) return TensorError(file, key, "missing \"dtype\"");
  if (shape == nullptr) return TensorError(file, key, "missing \"shape\"");
  if (offsets == nullptr) {
    return TensorError(file, key, "missing \"data_offsets\"");
  }

  if (dtype->kind != JsonValue::Kind::kString) {
    return TensorError(file, key, "\"dtype\" must be a string");
  }
  std::optional<SafetensorsDType> parsed = ParseSafetensorsDType(dtype->string);
  if (!parsed.has_value()) {
    return TensorError(file, key, Cat("unknown dtype ", Quoted(dtype->string)));
  }
  info.dtype = *parsed;

  if (shape->kind != JsonValue::Kind::kArray) {
    return TensorError(file, key, "\"shape\" must be an array");
  }
  if (shape->array.size() > kMaxTensorRank) {
    return TensorError(
        file, key,
        absl::StrFormat("\"shape\" has %d dimensions, more than the limit of "
                        "%d",
                        shape->array.size(), kMaxTensorRank));
  }
  // The element count, overflow-checked as it is formed.
  uint64_t num_elements = 1;
  bool overflow = false;
  for (const JsonValue& dim : shape->array) {
    uint64_t extent;
    if (!AsNonNegative(dim, INT64_MAX, &extent)) {
      return TensorError(file, key,
                         "\"shape\" entries must be integers in [0, 2^63-1]");
    }
    info.shape.push_back(static_cast<int64_t>(extent));
    if (extent != 0 && num_elements > UINT64_MAX / extent) overflow = true;
    num_elements *= extent;
  }
  const bool empty =
      std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end();
  if (empty) {
    num_elements = 0;
    overflow = false;
  }
  const uint64_t element_size = SafetensorsDTypeSize(info.dtype);
  if (overflow || num_elements > UINT64_MAX / element_size) {
    return TensorError(
        file, key,
        Cat("shape [", absl::StrJoin(info.shape, ", "), "] x ",
            SafetensorsDTypeName(info.dtype), " overflows 64 bits"));
  }
  // TensorInfo::num_elements() is an int64, so the count must fit in one.
  if (num_elements > static_cast<uint64_t>(INT64_MAX)) {
    return TensorError(file, key,
                       Cat("shape [", absl::StrJoin(info.shape, ", "),
                           "] has more than 2^63-1 elements"));
  }
  const uint64_t expected_bytes = num_elements * element_size;

  if (offsets->kind != JsonValue::Kind::kArray || offsets->array.size() != 2) {
    return TensorError(file, key,
                       "\"data_offsets\" must be an array of 2 integers");
  }
  if (!AsNonNegative(offsets->array[0], UINT64_MAX, &info.begin) ||
      !AsNonNegative(offsets->array[1], UINT64_MAX, &info.end)) {
    return TensorError(file, key,
                       "\"data_offsets\" must be non-negative integers");
  }
  if (info.end < info.begin) {
    return TensorError(file, key,
                       absl::StrFormat("data_offsets [%d, %d] end before they "
                                       "begin",
                                       info.begin, info.end));
  }
  if (info.end - info.begin != expected_bytes) {
    return TensorError(
        file, key,
        absl::StrFormat("shape [%s] of %s needs %d bytes but data_offsets "
                        "[%d, %d] span %d",
                        absl::StrJoin(info.shape, ", "),
                        SafetensorsDTypeName(info.dtype), expected_bytes,
                        info.begin, info.end, info.end - info.begin));
  }
  return info;
}

}  // namespace

std::string_view SafetensorsDTypeName(SafetensorsDType dtype) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.name;
  }
  return "?";
}

std::optional<SafetensorsDType> ParseSafetensorsDType(std::string_view name) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

size_t SafetensorsDTypeSize(SafetensorsDType dtype) {
  for (const DTypeEntry& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.size;
  }
  return 1;
}

int64_t TensorInfo::num_elements() const {
  // A 0 anywhere makes the tensor empty, however large the other extents
  // (e.g. [2^62, 4, 0]), so check for it before multiplying anything.
  for (int64_t extent : shape) {
    if (extent == 0) return 0;
  }
  // ParseSafetensors() rejects non-empty shapes whose count overflows, so this
  // cannot saturate for a parsed header; saturating keeps it defined anyway.
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (__builtin_mul_overflow(count, extent, &count)) return INT64_MAX;
  }
  return count;
}

SafetensorsHeader SafetensorsHeader::FromTable(std::vector<TensorInfo> tensors,
                                               uint64_t file_size) {
  SafetensorsHeader header;
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const TensorInfo& a, const TensorInfo& b) {
                     return a.begin < b.begin;
                   });
  header.tensors_ = std::move(tensors);
  header.data_size_ = file_size;
  header.index_.reserve(header.tensors_.size());
  for (size_t i = 0; i < header.tensors_.size(); ++i) {
    header.index_.emplace(header.tensors_[i].name, i);
  }
  return header;
}

const TensorInfo* SafetensorsHeader::Find(std::string_view name) const {
  auto it = index_.find(ToAbsl(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const std::string* SafetensorsHeader::FindMetadata(std::string_view key) const {
  for (const auto& [name, value] : metadata_) {
    if (name == key) return &value;
  }
  return nullptr;
}

absl::StatusOr<SafetensorsHeader> ParseSafetensors(
    std::span<const uint8_t> file, std::string_view file_name) {
  if (file.size() < 8) {
    return FileError(file_name,
                     absl::StrFormat("file is %d bytes, too short for the "
                                     "8-byte header length",
                                     file.size()));
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | file[i];
  if (header_size > kMaxHeaderBytes) {
    return FileError(file_name,
                     absl::StrFormat("header length %d exceeds the limit of "
                                     "%d bytes",
                                     header_size, kMaxHeaderBytes));
  }
  if (header_size > file.size() - 8) {
    return FileError(file_name,
                     absl::StrFormat("header length %d runs past the end of "
                                     "the %d-byte file",
                                     header_size, file.size()));
  }
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + 8,
                              header_size);
  if (text.empty() || text[0] != '{') {
    return FileError(file_name, "header does not start with '{'");
  }
  absl::StatusOr<JsonValue> json = ParseJson(text);
  if (!json.ok()) {
    return FileError(
        file_name, Cat("header is not valid JSON: ", json.status().message()));
  }

  SafetensorsHeader header;
  header.header_size_ = header_size;
  header.data_start_ = 8 + header_size;
  header.data_size_ = file.size() - 8 - header_size;
  for (size_t k = 0; k < json->keys.size(); ++k) {
    const std::string& key = json->keys[k];
    JsonValue& value = json->members[k];
    if (key == kMetadataKey) {
      if (value.kind != JsonValue::Kind::kObject) {
        return FileError(file_name, "__metadata__ must be an object");
      }
      for (size_t m = 0; m < value.keys.size(); ++m) {
        const std::string& name = value.keys[m];
        JsonValue& entry = value.members[m];
        if (entry.kind != JsonValue::Kind::kString) {
          return FileError(file_name, Cat("__metadata__ ", Quoted(name),
                                          ": value must be a string, got ",
                                          KindName(entry.kind)));
        }
        header.metadata_.emplace_back(name, std::move(entry.string));
      }
      continue;
    }
    absl::StatusOr<TensorInfo> info = ParseTensor(file_name, key, value);
    if (!info.ok()) return info.status();
    header.tensors_.push_back(*std::move(info));
  }

  // The tensors must tile the data section: sorted by offset, each starts
  // where the previous ended, the first at 0 and the last at the end.
  std::stable_sort(header.tensors_.begin(), header.tensors_.end(),
                   [](const TensorInfo& a, const TensorInfo& b) {
                     return a.begin != b.begin ? a.begin < b.begin
                                               : a.end < b.end;
                   });
  uint64_t covered = 0;
  const TensorInfo* previous = nullptr;
  for (const TensorInfo& info : header.tensors_) {
    if (info.end > header.data_size_) {
      return TensorError(
          file_name, info.name,
          absl::StrFormat("data_offsets [%d, %d] run past the %d-byte data "
                          "section",
                          info.begin, info.end, header.data_size_));
    }
    if (info.begin < covered) {
      return TensorError(
          file_name, info.name,
          absl::StrFormat("data_offsets [%d, %d] overlap tensor %s, which "
                          "ends at %d",
                          info.begin, info.end, Quoted(previous->name),
                          covered));
    }
    if (info.begin > covered) {
      return TensorError(
          file_name, info.name,
          absl::StrFormat("data_offsets [%d, %d] leave a gap: the previous "
                          "tensor ends at %d",
                          info.begin, info.end, covered));
    }
    covered = info.end;
    previous = &info;
  }
  if (covered != header.data_size_) {
    return FileError(file_name,
                     absl::StrFormat("tensors cover %d bytes of the %d-byte "
                                     "data section",
                                     covered, header.data_size_));
  }
  header.index_.reserve(header.tensors_.size());
  for (size_t i = 0; i < header.tensors_.size(); ++i) {
    header.index_.emplace(header.tensors_[i].name, i);
  }
  return header;
}

void SortForAlignment(std::vector<TensorSpec>& specs) {
  std::stable_sort(specs.begin(), specs.end(),
                   [](const TensorSpec& a, const TensorSpec& b) {
                     const size_t size_a = SafetensorsDTypeSize(a.dtype);
                     const size_t size_b = SafetensorsDTypeSize(b.dtype);
                     if (size_a != size_b) return size_a > size_b;
                     return a.name < b.name;
                   });
}

absl::StatusOr<std::string> EncodeSafetensorsHeader(
    const std::vector<TensorSpec>& specs,
    const std::vector<std::pair<std::string, std::string>>& metadata,
    uint64_t* data_size) {
  std::string json = "{";
  bool first = true;
  if (!metadata.empty()) {
    json.append("\"__metadata__\":{");
    absl::flat_hash_set<std::string> seen;
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (!seen.insert(metadata[i].first).second) {
        return absl::InvalidArgumentError(
            Cat("duplicate metadata key ", Quoted(metadata[i].first)));
      }
      if (!IsValidUtf8(metadata[i].first) || !IsValidUtf8(metadata[i].second)) {
        return absl::InvalidArgumentError(
            Cat("metadata ", Quoted(metadata[i].first), " is not UTF-8"));
      }
      if (i > 0) json.push_back(',');
      AppendJsonString(json, metadata[i].first);
      json.push_back(':');
      AppendJsonString(json, metadata[i].second);
    }
    json.push_back('}');
    first = false;
  }
  absl::flat_hash_set<std::string> names;
  uint64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    if (spec.name == kMetadataKey) {
      return absl::InvalidArgumentError(
          "\"__metadata__\" is reserved and cannot name a tensor");
    }
    if (!names.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          Cat("duplicate tensor name ", Quoted(spec.name)));
    }
    if (!IsValidUtf8(spec.name)) {
      return absl::InvalidArgumentError(
          Cat("tensor name ", Quoted(spec.name), " is not UTF-8"));
    }
    uint64_t bytes = SafetensorsDTypeSize(spec.dtype);
    for (int64_t extent : spec.shape) {
      if (extent < 0) {
        return absl::InvalidArgumentError(
            Cat("tensor ", Quoted(spec.name), ": negative dimension"));
      }
      if (extent != 0 && bytes > UINT64_MAX / static_cast<uint64_t>(extent)) {
        return absl::InvalidArgumentError(
            Cat("tensor ", Quoted(spec.name), ": size overflows"));
      }
      bytes *= static_cast<uint64_t>(extent);
    }
    if (offset > UINT64_MAX - bytes) {
      return absl::InvalidArgumentError("total size overflows");
    }
    if (!first) json.push_back(',');
    first = false;
    AppendJsonString(json, spec.name);
    json += Cat(":{\"dtype\":\"", SafetensorsDTypeName(spec.dtype),
                "\",\"shape\":[", absl::StrJoin(spec.shape, ","),
                "],\"data_offsets\":[", offset, ",", offset + bytes, "]}");
    offset += bytes;
  }
  json.push_back('}');
  // Pad with spaces so that the data section starts 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');
  if (json.size() > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("header of %d bytes exceeds the limit of %d",
                        json.size(), kMaxHeaderBytes));
  }
  std::string out(8, '\0');
  uint64_t length = json.size();
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>(length & 0xff);
    length >>= 8;
  }
  out.append(json);
  *data_size = offset;
  return out;
}

}  // namespace kindling::io
