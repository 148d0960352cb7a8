#include "kindling/io/json.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"

namespace kindling::io {
namespace {

// Length of the UTF-8 sequence starting at text[i] if it is well formed,
// else 0.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) {
    return static_cast<unsigned char>(text[i + k]);
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xbf;  // range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlongs
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // no overlongs
    if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
  }
  return length;
}

void AppendUtf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
}

// A recursive-descent parser over already UTF-8-validated text.
class Parser {
 public:
  Parser(std::string_view text, size_t max_values)
      : text_(text), max_values_(max_values) {}

  [[nodiscard]] absl::StatusOr<JsonValue> ParseDocument() {
    JsonValue value;
    KINDLING_RETURN_IF_ERROR(ParseValue(value, 0));
    SkipWhitespace();
    if (pos_ != text_.size()) return Error("unexpected text after the value");
    return value;
  }

 private:
  [[nodiscard]] absl::Status Error(std::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("byte %d: %s", pos_, problem));
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool AtEnd() const { return pos_ >= text_.size(); }

  [[nodiscard]] absl::Status ParseValue(JsonValue& value, int depth) {
    SkipWhitespace();
    if (AtEnd()) return Error("unexpected end of the JSON text");
    if (++values_ > max_values_) {
      return Error(
          absl::StrFormat("too many JSON values (more than %d)", max_values_));
    }
    const char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) {
        return Error(
            absl::StrFormat("nesting deeper than %d levels", kMaxJsonDepth));
      }
      return c == '{' ? ParseObject(value, depth + 1)
                      : ParseArray(value, depth + 1);
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::kString;
      return ParseString(value.string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseInteger(value);
    if (c == 't' || c == 'f' || c == 'n') {
      return Error("true, false and null are not allowed here");
    }
    return Error(absl::StrFormat("unexpected character '%s'", Printable(c)));
  }

  static std::string Printable(char c) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) return std::string(1, c);
    return absl::StrFormat("\\x%02x", byte);
  }

  [[nodiscard]] absl::Status ParseObject(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    absl::flat_hash_set<std::string> seen_keys;
    SkipWhitespace();
    if (!AtEnd() && text_[pos_] == '}') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      SkipWhitespace();
      if (AtEnd() || text_[pos_] != '"') return Error("expected a string key");
      const size_t key_pos = pos_;
      std::string key;
      KINDLING_RETURN_IF_ERROR(ParseString(key));
      if (!seen_keys.insert(key).second) {
        pos_ = key_pos;
        return Error(absl::StrFormat("duplicate key \"%s\"", key));
      }
      SkipWhitespace();
      if (AtEnd() || text_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      JsonValue member;
      KINDLING_RETURN_IF_ERROR(ParseValue(member, depth));
      value.keys.push_back(std::move(key));
      value.members.push_back(std::move(member));
      SkipWhitespace();
      if (AtEnd()) return Error("unexpected end inside an object");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == '}') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or '}'");
    }
  }

  [[nodiscard]] absl::Status ParseArray(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipWhitespace();
    if (!AtEnd() && text_[pos_] == ']') {
      ++pos_;
      return absl::OkStatus();
    }
    while (true) {
      JsonValue element;
      KINDLING_RETURN_IF_ERROR(ParseValue(element, depth));
      value.array.push_back(std::move(element));
      SkipWhitespace();
      if (AtEnd()) return Error("unexpected end inside an array");
      if (text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (text_[pos_] == ']') {
        ++pos_;
        return absl::OkStatus();
      }
      return Error("expected ',' or ']'");
    }
  }

  [[nodiscard]] absl::Status ParseInteger(JsonValue& value) {
    value.kind = JsonValue::Kind::kInteger;
    if (text_[pos_] == '-') {
      value.negative = true;
      ++pos_;
    }
    if (AtEnd() || text_[pos_] < '0' || text_[pos_] > '9') {
      return Error("expected a digit");
    }
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
        text_[pos_ + 1] >= '0' && text_[pos_ + 1] <= '9') {
      return Error("leading zeros are not allowed");
    }
    uint64_t magnitude = 0;
    while (!AtEnd() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (magnitude > (UINT64_MAX - digit) / 10) {
        return Error("integer does not fit in 64 bits");
      }
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (!AtEnd() &&
        (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      return Error("only integers are allowed (no fraction or exponent)");
    }
    value.integer = magnitude;
    return absl::OkStatus();
  }

  // Reads four hex digits at pos_.
  [[nodiscard]] absl::Status ParseHex4(uint32_t& out) {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_ + i];
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return Error("bad hex digit in \\u escape");
      }
      out = out * 16 + digit;
    }
    pos_ += 4;
    return absl::OkStatus();
  }

  [[nodiscard]] absl::Status ParseString(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (AtEnd()) return Error("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return Error("unescaped control character in a string");
      }
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (AtEnd()) return Error("unterminated escape");
      const char escape = text_[pos_++];
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out.push_back(escape);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t code_unit = 0;
          KINDLING_RETURN_IF_ERROR(ParseHex4(code_unit));
          if (code_unit >= 0xdc00 && code_unit <= 0xdfff) {
            return Error("lone low surrogate in \\u escape");
          }
          if (code_unit >= 0xd800 && code_unit <= 0xdbff) {
            if (text_.size() - pos_ < 2 || text_[pos_] != '\\' ||
                text_[pos_ + 1] != 'u') {
              return Error("high surrogate not followed by a low surrogate");
            }
            pos_ += 2;
            uint32_t low = 0;
            KINDLING_RETURN_IF_ERROR(ParseHex4(low));
            if (low < 0xdc00 || low > 0xdfff) {
              return Error("high surrogate not followed by a low surrogate");
            }
            code_unit = 0x10000 + ((code_unit - 0xd800) << 10) + (low - 0xdc00);
          }
          AppendUtf8(out, code_unit);
          break;
        }
        default:
          --pos_;
          return Error(
              absl::StrFormat("invalid escape '\\%s'", Printable(escape)));
      }
    }
  }

  std::string_view text_;
  size_t max_values_;
  size_t values_ = 0;  // values begun so far, counted against max_values_
  size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == key) return &members[i];
  }
  return nullptr;
}

std::string_view KindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kInteger:
      return "integer";
    case JsonValue::Kind::kString:
      return "string";
    case JsonValue::Kind::kArray:
      return "array";
    case JsonValue::Kind::kObject:
      return "object";
  }
  return "value";
}

bool IsValidUtf8(std::string_view text, size_t* error_offset) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      if (error_offset != nullptr) *error_offset = i;
      return false;
    }
    i += length;
  }
  return true;
}

absl::StatusOr<JsonValue> ParseJson(std::string_view text, size_t max_values) {
  size_t bad = 0;
  if (!IsValidUtf8(text, &bad)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("byte %d: invalid UTF-8", bad));
  }
  return Parser(text, max_values).ParseDocument();
}

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20) {
      out.append(absl::StrFormat("\\u%04x", byte));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

}  // namespace kindling::io
