#include "kindling/io/inspect.h"

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "kindling/io/json.h"
#include "kindling/io/mapped_file.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/strings.h"
#include "kindling/io/torch_zip.h"

namespace kindling::io {
namespace {

constexpr std::string_view kUsage = "usage: kindling-inspect [--json] FILE";

std::string ShapeText(const std::vector<int64_t>& shape) {
  return Cat("[", absl::StrJoin(shape, ", "), "]");
}

// Makes a key printable on one table line: control characters escaped.
std::string Printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", byte);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string OneLine(std::string_view message) {
  std::string out;
  for (const char c : message) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// FormatName() is the file's format as the totals name it.
std::string_view FormatName(bool torch_save) {
  return torch_save ? "torch.save" : "safetensors";
}

void PrintTable(const SafetensorsHeader& header, uint64_t file_size,
                bool torch_save, std::ostream& out) {
  size_t key_width = 3;
  for (const TensorInfo& info : header.tensors()) {
    key_width = std::max(key_width, Printable(info.name).size());
  }
  key_width = std::min<size_t>(key_width, 80);
  out << absl::StrFormat("%-*s  %-7s  %-24s  %14s\n", key_width, "key", "dtype",
                         "shape", "bytes");
  uint64_t elements = 0;
  for (const TensorInfo& info : header.tensors()) {
    out << absl::StrFormat(
        "%-*s  %-7s  %-24s  %14d\n", key_width, Printable(info.name),
        SafetensorsDTypeName(info.dtype), ShapeText(info.shape), info.nbytes());
    elements += static_cast<uint64_t>(info.num_elements());
  }
  out << "\nmetadata:\n";
  if (header.metadata().empty()) out << "  (none)\n";
  for (const auto& [key, value] : header.metadata()) {
    out << "  " << Printable(key) << " = " << Printable(value) << "\n";
  }
  if (torch_save) {
    // Offsets are into the zip; tensors may share a storage's bytes.
    out << absl::StrFormat(
        "\ntotal: %d tensors, %d elements, %d file bytes (torch.save zip)\n",
        header.tensors().size(), elements, file_size);
    return;
  }
  out << absl::StrFormat(
      "\ntotal: %d tensors, %d elements, %d data bytes, %d header bytes, %d "
      "file bytes\n",
      header.tensors().size(), elements, header.data_size(),
      header.header_size(), file_size);
}

void PrintJson(const SafetensorsHeader& header, uint64_t file_size,
               bool torch_save, std::ostream& out) {
  std::string json = "{\"tensors\":[";
  uint64_t elements = 0;
  bool first = true;
  for (const TensorInfo& info : header.tensors()) {
    if (!first) json.push_back(',');
    first = false;
    json.append("{\"key\":");
    AppendJsonString(json, info.name);
    json +=
        Cat(",\"dtype\":\"", SafetensorsDTypeName(info.dtype), "\",\"shape\":[",
            absl::StrJoin(info.shape, ","), "],\"data_offsets\":[", info.begin,
            ",", info.end, "],\"bytes\":", info.nbytes(), "}");
    elements += static_cast<uint64_t>(info.num_elements());
  }
  json.append("],\"metadata\":{");
  first = true;
  for (const auto& [key, value] : header.metadata()) {
    if (!first) json.push_back(',');
    first = false;
    AppendJsonString(json, key);
    json.push_back(':');
    AppendJsonString(json, value);
  }
  json += Cat(
      "},\"totals\":{\"tensors\":", header.tensors().size(),
      ",\"elements\":", elements, ",\"data_bytes\":", header.data_size(),
      ",\"header_bytes\":", header.header_size(), ",\"file_bytes\":", file_size,
      ",\"format\":\"", FormatName(torch_save), "\"}}");
  out << json << "\n";
}

}  // namespace

int RunInspect(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  bool json = false;
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      out << kUsage << "\n";
      return 0;
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "--") {
      err << "kindling-inspect: unknown flag " << arg << "\n" << kUsage << "\n";
      return 2;
    } else if (arg != "--") {
      files.push_back(arg);
    }
  }
  if (files.size() != 1) {
    err << kUsage << "\n";
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const MappedFile>> mapping =
      MappedFile::Open(files[0]);
  if (!mapping.ok()) {
    err << "error: " << OneLine(ToStd(mapping.status().message())) << "\n";
    return 1;
  }
  const std::span<const uint8_t> bytes = (*mapping)->bytes();
  const bool torch_save =
      LooksLikeZip(bytes) || LooksLikeLegacyTorchSave(bytes);
  absl::StatusOr<SafetensorsHeader> header =
      torch_save ? ParseTorchZip(bytes, files[0])
                 : ParseSafetensors(bytes, files[0]);
  if (!header.ok()) {
    err << "error: " << OneLine(ToStd(header.status().message())) << "\n";
    return 1;
  }
  const uint64_t file_size = (*mapping)->bytes().size();
  if (json) {
    PrintJson(*header, file_size, torch_save, out);
  } else {
    PrintTable(*header, file_size, torch_save, out);
  }
  return 0;
}

}  // namespace kindling::io
