// A small, strict JSON reader and string writer for safetensors headers.
//
// Safetensors headers are attacker-controlled bytes, so this parser accepts
// only what a header needs and rejects everything else with a message that
// says where and why: objects, arrays, strings (with every escape, including
// \u surrogate pairs) and integers. Fractions, exponents, `true`, `false` and
// `null` are rejected, as are duplicate object keys, nesting deeper than
// kMaxJsonDepth, invalid UTF-8 (overlong forms, surrogates, code points past
// U+10FFFF) and unescaped control characters.
//
//   absl::StatusOr<JsonValue> value = ParseJson(R"({"a": [1, 2]})");
//   value->Find("a")->array[1].integer;  // 2
//
// Nothing here depends on tensors, so the fuzzer builds it alone.
#ifndef KINDLING_IO_JSON_H_
#define KINDLING_IO_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kindling::io {

// kMaxJsonDepth bounds the nesting of arrays and objects (a safetensors
// header needs 3), so a hostile header cannot exhaust the stack.
inline constexpr int kMaxJsonDepth = 16;

// kMaxJsonValues bounds how many values (of any kind, at any depth) one
// document may hold. A JsonValue is ~128 bytes, so without a bound a 100 MB
// header of `[0,0,0,...]` would allocate ~6 GB. 2^21 values cost at most
// ~256 MB and still admit ~200,000 tensors of rank <= 4 (a tensor entry is
// about 10 values), far beyond any published checkpoint.
inline constexpr size_t kMaxJsonValues = size_t{1} << 21;

// JsonValue is one parsed value. Objects keep their members in file order.
struct JsonValue {
  enum class Kind { kInteger, kString, kArray, kObject };

  Kind kind = Kind::kInteger;
  // kInteger: the magnitude and sign. Integers outside [-2^64+1, 2^64-1] are
  // a parse error.
  uint64_t integer = 0;
  bool negative = false;
  // kString: the decoded UTF-8 text.
  std::string string;
  // kArray: the elements.
  std::vector<JsonValue> array;
  // kObject: keys and their values, in file order; keys are unique. (Two
  // vectors, because a std::pair holding the still-incomplete JsonValue is
  // not allowed.)
  std::vector<std::string> keys;
  std::vector<JsonValue> members;

  // Find() is the member named `key` of an object, or nullptr.
  const JsonValue* Find(std::string_view key) const;
};

// KindName() is "integer", "string", "array" or "object", for messages.
std::string_view KindName(JsonValue::Kind kind);

// ParseJson() parses exactly one value; only whitespace may follow it. Errors
// are InvalidArgument "byte N: problem"; a document with more than
// `max_values` values fails with "too many JSON values".
[[nodiscard]] absl::StatusOr<JsonValue> ParseJson(
    std::string_view text, size_t max_values = kMaxJsonValues);

// IsValidUtf8() is true for well-formed UTF-8 (no overlongs, no surrogates,
// nothing past U+10FFFF). `error_offset` gets the first bad byte otherwise.
bool IsValidUtf8(std::string_view text, size_t* error_offset = nullptr);

// AppendJsonString() appends `text` as a quoted JSON string, escaping quotes,
// backslashes and control characters.
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace kindling::io

#endif  // KINDLING_IO_JSON_H_
