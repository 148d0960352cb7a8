#include "kindling/tensor/device.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kindling {

absl::StatusOr<Device> Device::Parse(std::string_view text) {
  const absl::string_view view(text.data(), text.size());
  if (view == "cpu") return Cpu();
  if (view == "cuda") return Cuda(0);
  constexpr absl::string_view kCudaPrefix = "cuda:";
  if (view.substr(0, kCudaPrefix.size()) == kCudaPrefix) {
    const absl::string_view digits = view.substr(kCudaPrefix.size());
    int index = 0;
    const bool all_digits =
        !digits.empty() &&
        digits.find_first_not_of("0123456789") == absl::string_view::npos;
    if (all_digits && absl::SimpleAtoi(digits, &index) && index >= 0) {
      return Cuda(index);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid device \"", view, "\" (expected cpu, cuda or cuda:N)"));
}

std::string Device::ToString() const {
  if (type_ == DeviceKind::kCpu) return "cpu";
  return absl::StrCat("cuda:", index_);
}

}  // namespace kindling
