#include "kindling/backend/cuda/index_fault.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"

namespace kindling::cuda {

std::string DescribeIndexFault(const IndexFault& fault,
                               const std::string& device) {
  const char* op =
      reinterpret_cast<const char*>(static_cast<uintptr_t>(fault.op));
  return absl::StrFormat(
      "%s: index %d out of range [0, %d) on %s (found by the kernel; reported "
      "at the next synchronization, so ops queued after it also ran)",
      op, fault.value, fault.bound, device);
}

std::string TakeIndexFault(IndexFault& fault, const std::string& device) {
  if (fault.op == 0) return "";
  std::string message = DescribeIndexFault(fault, device);
  fault = IndexFault{};
  return message;
}

}  // namespace kindling::cuda
