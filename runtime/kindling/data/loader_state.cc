#include "kindling/data/loader_state.h"

#include <charconv>
#include <map>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace kindling::data {
namespace {

[[nodiscard]] absl::Status BadState(std::string_view text,
                                    std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrFormat("loader state \"%s\": %s", text, problem));
}

// ParseFields() splits "name=value name=value ..." into a map.
[[nodiscard]] absl::StatusOr<std::map<std::string, std::string>> ParseFields(
    std::string_view text) {
  std::map<std::string, std::string> fields;
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    const size_t end = std::min(text.find(' ', at), text.size());
    const std::string_view field = text.substr(at, end - at);
    const size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      return BadState(text, absl::StrFormat("\"%s\" is not name=value", field));
    }
    const std::string name(field.substr(0, equals));
    if (!fields.emplace(name, std::string(field.substr(equals + 1))).second) {
      return BadState(text, absl::StrFormat("%s given twice", name));
    }
    at = end;
  }
  return fields;
}

template <class Number>
[[nodiscard]] absl::Status ParseField(
    std::string_view text, const std::map<std::string, std::string>& fields,
    const std::string& name, Number& value) {
  const auto found = fields.find(name);
  if (found == fields.end()) {
    return BadState(text, absl::StrFormat("no %s", name));
  }
  const std::string& digits = found->second;
  const auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) {
    return BadState(text,
                    absl::StrFormat("%s \"%s\" is not a number", name, digits));
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeLoaderState(const LoaderState& state) {
  return absl::StrFormat("seed=%d epoch=%d position=%d dataset_size=%d",
                         state.seed, state.epoch, state.position,
                         state.dataset_size);
}

absl::StatusOr<LoaderState> DecodeLoaderState(std::string_view text) {
  absl::StatusOr<std::map<std::string, std::string>> fields = ParseFields(text);
  if (!fields.ok()) return fields.status();
  for (const auto& [name, value] : *fields) {
    if (name != "seed" && name != "epoch" && name != "position" &&
        name != "dataset_size") {
      return BadState(text, absl::StrFormat("unknown field %s", name));
    }
  }
  LoaderState state;
  for (absl::Status status :
       {ParseField(text, *fields, "seed", state.seed),
        ParseField(text, *fields, "epoch", state.epoch),
        ParseField(text, *fields, "position", state.position),
        ParseField(text, *fields, "dataset_size", state.dataset_size)}) {
    if (!status.ok()) return status;
  }
  if (state.epoch < 0 || state.position < 0 || state.dataset_size < 0 ||
      state.position > state.dataset_size) {
    return BadState(text, "needs epoch >= 0 and 0 <= position <= dataset_size");
  }
  return state;
}

}  // namespace kindling::data
