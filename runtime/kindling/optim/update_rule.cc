#include "kindling/optim/update_rule.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kindling {

void HyperWriter::Double(std::string_view name, double value) {
  entries_.emplace_back(std::string(name), absl::StrFormat("%.17g", value));
}

void HyperWriter::Bool(std::string_view name, bool value) {
  entries_.emplace_back(std::string(name), value ? "true" : "false");
}

const std::string* HyperReader::Text(std::string_view name) {
  const std::string* text = lookup_(name);
  if (text == nullptr) {
    errors_.push_back(
        absl::StrCat("missing hyper-parameter `", std::string(name), "`"));
  }
  return text;
}

double HyperReader::Double(std::string_view name) {
  const std::string* text = Text(name);
  double value = 0;
  if (text != nullptr && !absl::SimpleAtod(*text, &value)) {
    errors_.push_back(absl::StrCat("hyper-parameter `", std::string(name),
                                   "` = `", *text, "` is not a number"));
  }
  return value;
}

bool HyperReader::Bool(std::string_view name) {
  const std::string* text = Text(name);
  if (text == nullptr) return false;
  if (*text != "true" && *text != "false") {
    errors_.push_back(absl::StrCat("hyper-parameter `", std::string(name),
                                   "` = `", *text, "` is not true or false"));
  }
  return *text == "true";
}

void CheckHyperRange(std::vector<std::string>& errors, std::string_view name,
                     double value, double low, std::optional<double> high) {
  if (value >= low && (!high.has_value() || value < *high)) return;
  errors.push_back(
      high.has_value()
          ? absl::StrCat(std::string(name), " ", value, " must be in [", low,
                         ", ", *high, ")")
          : absl::StrCat(std::string(name), " ", value, " must be >= ", low));
}

}  // namespace kindling
