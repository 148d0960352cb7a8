// GpuRequirement: when a test or benchmark may skip for want of a GPU.
//
// A GPU case that skips without a device is honest on a machine with no GPU
// and a lie on a GPU machine whose driver is broken: there "all skipped" reads
// as "all green". So the decision is made in one place, from three facts:
//   * CudaAvailability() (cuda_context.h): devices visible, "no device"
//     (NotFound) or "CUDA failed to initialize" (any other error);
//   * how many devices the case needs;
//   * KINDLING_REQUIRE_GPU=N, which a run on a GPU machine sets (the bundle's
//     runner sets it to nvidia-smi's device count): N devices must be usable.
// A case runs when it has its devices; fails when CUDA failed to initialize
// (always: a driver is present and broken) or when the run requires the
// devices it lacks; and skips, saying why, only otherwise.
//
// The decision is plain C++ (DecideGpuCheck), unit-tested in the default
// build; CheckCudaDevices() (cuda_context.h) applies it to this process.
//
//   const GpuCheck check = CheckCudaDevices(1);
//   if (check.verdict == GpuVerdict::kFail) GTEST_FAIL() << check.message;
//   if (check.verdict == GpuVerdict::kSkip) GTEST_SKIP() << check.message;
#ifndef KINDLING_BACKEND_CUDA_GPU_REQUIREMENT_H_
#define KINDLING_BACKEND_CUDA_GPU_REQUIREMENT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kindling::cuda {

// The environment variable a GPU run sets to the number of devices it must
// have.
inline constexpr char kRequireGpuVariable[] = "KINDLING_REQUIRE_GPU";

enum class GpuVerdict { kRun, kSkip, kFail };

// GpuCheck is a verdict and, unless kRun, the reason to print.
struct GpuCheck {
  GpuVerdict verdict = GpuVerdict::kRun;
  std::string message;
};

// ParseRequiredGpus() reads KINDLING_REQUIRE_GPU's value: 0 for null or ""
// (not required), else a whole number from 0 to 64; InvalidArgument naming
// the variable and the value otherwise.
[[nodiscard]] absl::StatusOr<int> ParseRequiredGpus(const char* value);

// RequiredGpus() is ParseRequiredGpus() of this process's environment, read
// once; a malformed value aborts naming it (a GPU run must not silently
// become a run that may skip).
int RequiredGpus();

// DecideGpuCheck() is the verdict for a case needing `needed` devices when
// CUDA reports `availability` and `devices` usable devices, and the run
// requires `required` devices (see the file comment).
GpuCheck DecideGpuCheck(const absl::Status& availability, int devices,
                        int required, int needed);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_GPU_REQUIREMENT_H_
