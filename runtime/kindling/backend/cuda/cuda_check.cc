#include "kindling/backend/cuda/cuda_check.h"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kindling::cuda {
namespace {

// This thread's last kRecentLaunches launch names, a ring: launch i is at
// i % kRecentLaunches.
struct RecentLaunches {
  std::array<const char*, internal::kRecentLaunches> names{};
  int64_t count = 0;
};
thread_local RecentLaunches recent_launches;

std::string CudaErrorText(cudaError_t error) {
  return absl::StrFormat("%s: %s", cudaGetErrorName(error),
                         cudaGetErrorString(error));
}

std::string CublasStatusText(cublasStatus_t status) {
  return absl::StrFormat("%s: %s", cublasGetStatusName(status),
                         cublasGetStatusString(status));
}

absl::StatusCode CodeFor(cudaError_t error) {
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::StatusCode::kResourceExhausted;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
      return absl::StatusCode::kFailedPrecondition;
    case cudaErrorInvalidValue:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status CudaStatus(cudaError_t error, std::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::Status(
      CodeFor(error),
      absl::StrFormat("%s failed: %s (recent launches on this thread, "
                      "oldest first: %s)",
                      call, CudaErrorText(error),
                      internal::RecentKernelLaunches()));
}

absl::Status CublasStatus(cublasStatus_t status, std::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code = status == CUBLAS_STATUS_ALLOC_FAILED
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(
      code, absl::StrFormat("%s failed: %s", call, CublasStatusText(status)));
}

namespace internal {

void CudaCallFailed(const char* file, int line, const char* call,
                    cudaError_t error) {
  std::fprintf(stderr,
               "kindling: %s:%d: %s failed: %s (recent launches on this "
               "thread, oldest first: %s)\n",
               file, line, call, CudaErrorText(error).c_str(),
               RecentKernelLaunches().c_str());
  std::abort();
}

void CublasCallFailed(const char* file, int line, const char* call,
                      cublasStatus_t status) {
  std::fprintf(stderr,
               "kindling: %s:%d: %s failed: %s (recent launches on this "
               "thread, oldest first: %s)\n",
               file, line, call, CublasStatusText(status).c_str(),
               RecentKernelLaunches().c_str());
  std::abort();
}

void NoteKernelLaunch(const char* kernel) {
  RecentLaunches& recent = recent_launches;
  recent.names[recent.count % kRecentLaunches] = kernel;
  ++recent.count;
}

const char* LastKernelLaunch() {
  const RecentLaunches& recent = recent_launches;
  if (recent.count == 0) return "none";
  return recent.names[(recent.count - 1) % kRecentLaunches];
}

std::string RecentKernelLaunches() {
  const RecentLaunches& recent = recent_launches;
  if (recent.count == 0) return "none";
  std::vector<const char*> names;
  const int64_t first =
      recent.count > kRecentLaunches ? recent.count - kRecentLaunches : 0;
  for (int64_t i = first; i < recent.count; ++i) {
    names.push_back(recent.names[i % kRecentLaunches]);
  }
  return absl::StrJoin(names, ", ");
}

bool SyncEveryLaunch() {
  static const bool sync = [] {
    const char* value = std::getenv("KINDLING_CUDA_SYNC_LAUNCHES");
    return value != nullptr && value[0] != '\0' &&
           std::string_view(value) != "0";
  }();
  return sync;
}

void SynchronizeAfterLaunch(const char* kernel, const char* file, int line) {
  const cudaError_t error = cudaDeviceSynchronize();
  if (error == cudaSuccess) return;
  std::fprintf(stderr,
               "kindling: %s:%d: %s failed on the device: %s "
               "(KINDLING_CUDA_SYNC_LAUNCHES=1: every launch is waited for, "
               "so this launch is the one that failed)\n",
               file, line, kernel, CudaErrorText(error).c_str());
  std::abort();
}

}  // namespace internal
}  // namespace kindling::cuda
