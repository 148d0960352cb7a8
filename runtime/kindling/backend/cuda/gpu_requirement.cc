#include "kindling/backend/cuda/gpu_requirement.h"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "kindling/core/check.h"

namespace kindling::cuda {

absl::StatusOr<int> ParseRequiredGpus(const char* value) {
  if (value == nullptr || value[0] == '\0') return 0;
  int required = 0;
  if (!absl::SimpleAtoi(value, &required) || required < 0 || required > 64) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=\"%s\": expected the number of CUDA devices the run must have "
        "(0 to 64)",
        kRequireGpuVariable, value));
  }
  return required;
}

int RequiredGpus() {
  static const int required = [] {
    const absl::StatusOr<int> parsed =
        ParseRequiredGpus(std::getenv(kRequireGpuVariable));
    KINDLING_CHECK(parsed.ok(), "%s", parsed.status().message());
    return *parsed;
  }();
  return required;
}

GpuCheck DecideGpuCheck(const absl::Status& availability, int devices,
                        int required, int needed) {
  if (!availability.ok() && !absl::IsNotFound(availability)) {
    // A driver is there and CUDA cannot use it: never a skip.
    return {GpuVerdict::kFail, std::string(availability.message())};
  }
  if (devices >= needed) return {};
  const std::string why =
      devices == 0 && !availability.ok()
          ? std::string(availability.message())
          : absl::StrFormat("needs %d CUDA device(s), %d visible", needed,
                            devices);
  if (required >= needed) {
    return {GpuVerdict::kFail,
            absl::StrFormat("%s=%d: this run must have %d CUDA device(s), "
                            "but %s",
                            kRequireGpuVariable, required, required, why)};
  }
  return {GpuVerdict::kSkip, why};
}

}  // namespace kindling::cuda
