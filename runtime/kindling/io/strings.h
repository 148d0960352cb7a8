// Conversions between std::string_view and absl::string_view.
//
// Debian builds Abseil with ABSL_OPTION_USE_STD_STRING_VIEW=0, so the two are
// distinct types and absl::StrCat() and friends do not take a
// std::string_view. Kindling's APIs use std types; these helpers cross the
// boundary explicitly.
#ifndef KINDLING_IO_STRINGS_H_
#define KINDLING_IO_STRINGS_H_

#include <concepts>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace kindling::io {

inline absl::string_view ToAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}
inline std::string_view ToStd(absl::string_view text) {
  return std::string_view(text.data(), text.size());
}

namespace strings_internal {
inline void AppendPiece(std::string& out, std::string_view text) {
  out.append(text);
}
inline void AppendPiece(std::string& out, absl::string_view text) {
  out.append(text.data(), text.size());
}
inline void AppendPiece(std::string& out, const char* text) {
  out.append(text);
}
inline void AppendPiece(std::string& out, const std::string& text) {
  out.append(text);
}
template <std::integral T>
void AppendPiece(std::string& out, T number) {
  out.append(std::to_string(number));
}
}  // namespace strings_internal

// Cat() concatenates strings (std or absl views) and integers, like
// absl::StrCat() but taking std::string_view.
template <class... Pieces>
std::string Cat(const Pieces&... pieces) {
  std::string out;
  (strings_internal::AppendPiece(out, pieces), ...);
  return out;
}

}  // namespace kindling::io

#endif  // KINDLING_IO_STRINGS_H_
