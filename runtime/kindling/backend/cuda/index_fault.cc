#include "kindling/backend/cuda/index_fault.h"

#include <atomic>
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
  // The device writes this record concurrently: read the name with acquire
  // (the numbers were written before it), clear the numbers, then the name.
  std::atomic_ref<unsigned long long> op(fault.op);
  const unsigned long long name = op.load(std::memory_order_acquire);
  if (name == 0 || name == kIndexFaultClaimed) return "";
  IndexFault published = fault;
  published.op = name;
  std::string message = DescribeIndexFault(published, device);
  fault.value = 0;
  fault.bound = 0;
  op.store(0, std::memory_order_release);
  return message;
}

}  // namespace kindling::cuda
