#include "kindling/backend/cuda/cuda_check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"

namespace kindling::cuda {
namespace {

thread_local const char* last_kernel_launch = "none";

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
      absl::StrFormat("%s failed: %s (last kernel launched on this "
                      "thread: %s)",
                      call, CudaErrorText(error),
                      internal::LastKernelLaunch()));
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
               "kindling: %s:%d: %s failed: %s (last kernel launched on this "
               "thread: %s)\n",
               file, line, call, CudaErrorText(error).c_str(),
               LastKernelLaunch());
  std::abort();
}

void CublasCallFailed(const char* file, int line, const char* call,
                      cublasStatus_t status) {
  std::fprintf(stderr, "kindling: %s:%d: %s failed: %s\n", file, line, call,
               CublasStatusText(status).c_str());
  std::abort();
}

void NoteKernelLaunch(const char* kernel) { last_kernel_launch = kernel; }

const char* LastKernelLaunch() { return last_kernel_launch; }

}  // namespace internal
}  // namespace kindling::cuda
