#include "kindling/core/param_id.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"

namespace kindling {
namespace {

constexpr size_t kHexDigits = 16;
// Long garbage is cut in error messages so that a corrupt checkpoint cannot
// produce a megabyte-long status.
constexpr size_t kMaxQuotedChars = 40;

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Debian's Abseil has its own string_view type (ABSL_OPTION_USE_STD_STRING_VIEW
// is 0), so std::string_view needs an explicit bridge.
absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

std::string Quoted(std::string_view text) {
  if (text.size() <= kMaxQuotedChars) {
    return absl::StrFormat("\"%s\"", absl::CHexEscape(ToAbsl(text)));
  }
  return absl::StrFormat(
      "\"%s...\" (%d bytes)",
      absl::CHexEscape(ToAbsl(text.substr(0, kMaxQuotedChars))), text.size());
}

}  // namespace

ParamId ParamId::New() {
  // One generator per thread: no lock, and absl::BitGen seeds itself from the
  // OS entropy pool.
  thread_local absl::BitGen generator;
  return ParamId(absl::Uniform<uint64_t>(generator));
}

absl::StatusOr<ParamId> ParamId::Parse(std::string_view text) {
  if (text.size() != kHexDigits) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid ParamId %s: expected %d hexadecimal digits, got %d characters",
        Quoted(text), kHexDigits, text.size()));
  }
  uint64_t value = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int digit = HexDigitValue(text[i]);
    if (digit < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "invalid ParamId %s: character %d is not a hexadecimal digit",
          Quoted(text), i));
    }
    value = (value << 4) | static_cast<uint64_t>(digit);
  }
  return ParamId(value);
}

std::string ParamId::ToString() const {
  return absl::StrFormat("%016x", value_);
}

}  // namespace kindling
