// Checking CUDA and cuBLAS calls: an abort naming the call, or a Status.
//
// Every CUDA runtime and cuBLAS call returns an error code; none may be
// ignored. Where a failure is a bug or leaves no way to continue (a failed
// launch inside a kernel wrapper, a failed free), wrap the call in
// KINDLING_CUDA_CHECK / KINDLING_CUBLAS_CHECK: it aborts printing the call's
// text, the error's name and description, and file:line. Where a caller can
// handle the failure (an allocation, a Synchronize() surfacing an earlier
// asynchronous error), turn the code into an absl::Status with CudaStatus(),
// which names the call too.
//
//   KINDLING_CUDA_CHECK(cudaMemsetAsync(ptr, 0, nbytes, stream));
//   KINDLING_CUBLAS_CHECK(cublasSgemm(handle, ...));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   KINDLING_CUDA_CHECK_LAUNCH("my_kernel");
//   absl::Status status = CudaStatus(cudaStreamSynchronize(s), "sync");
//
// Asynchronous errors. A kernel that faults reports the fault at a later,
// unrelated call (usually a synchronize), by which time other kernels may
// have been queued after it. So every launch names itself: a <<<...>>>
// launch is followed by KINDLING_CUDA_CHECK_LAUNCH("Kernel"), a cuBLAS call
// is wrapped in KINDLING_CUBLAS_LAUNCH (both enforced for every file of the
// backend by //tests/backend/cuda:launch_names_test). Each thread keeps its
// last kRecentLaunches names, and every error message of CudaStatus() and of
// the aborts lists them, oldest first: the faulting kernel is one of them
// unless more launches came after it. To name it exactly, run with
// KINDLING_CUDA_SYNC_LAUNCHES=1: every launch is then followed by a device
// synchronize, and a fault aborts naming the kernel just launched and
// file:line (slow; for debugging and for the GPU runner's re-run of a
// failed test).
#ifndef KINDLING_BACKEND_CUDA_CUDA_CHECK_H_
#define KINDLING_BACKEND_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "absl/base/optimization.h"
#include "absl/status/status.h"

namespace kindling::cuda {

// CudaStatus() is OK for cudaSuccess, else an error naming `call`, the
// error's name and description and the recent launches of this thread.
// Out of memory maps to ResourceExhausted, no device or driver to
// FailedPrecondition, invalid arguments to InvalidArgument, anything else to
// Internal.
[[nodiscard]] absl::Status CudaStatus(cudaError_t error, std::string_view call);

// CublasStatus() is the same for a cuBLAS status code.
[[nodiscard]] absl::Status CublasStatus(cublasStatus_t status,
                                        std::string_view call);

namespace internal {

// Abort with "kindling: <file>:<line>: <call> failed: <name>: <description>"
// and the recent launches.
[[noreturn]] void CudaCallFailed(const char* file, int line, const char* call,
                                 cudaError_t error);
[[noreturn]] void CublasCallFailed(const char* file, int line, const char* call,
                                   cublasStatus_t status);

// How many launch names each thread remembers.
inline constexpr int kRecentLaunches = 8;

// NoteKernelLaunch() records `kernel` (a string literal) as this thread's
// newest launch. LastKernelLaunch() is the newest ("none" before any);
// RecentKernelLaunches() the remembered ones, oldest first, comma-separated
// ("none" before any).
void NoteKernelLaunch(const char* kernel);
const char* LastKernelLaunch();
std::string RecentKernelLaunches();

// SyncEveryLaunch() is true when KINDLING_CUDA_SYNC_LAUNCHES is set to a
// value other than "0" or "" (read once per process).
bool SyncEveryLaunch();

// SynchronizeAfterLaunch() waits for the device and aborts naming `kernel`
// and file:line if that surfaced an error: the KINDLING_CUDA_SYNC_LAUNCHES
// path of the launch macros.
void SynchronizeAfterLaunch(const char* kernel, const char* file, int line);

}  // namespace internal
}  // namespace kindling::cuda

// KINDLING_CUDA_CHECK(call) evaluates a cudaError_t expression once and
// aborts, naming it, unless it is cudaSuccess.
#define KINDLING_CUDA_CHECK(call)                                           \
  do {                                                                      \
    const cudaError_t kindling_cuda_error = (call);                         \
    if (ABSL_PREDICT_FALSE(kindling_cuda_error != cudaSuccess)) {           \
      ::kindling::cuda::internal::CudaCallFailed(__FILE__, __LINE__, #call, \
                                                 kindling_cuda_error);      \
    }                                                                       \
  } while (false)

// KINDLING_CUBLAS_CHECK(call) does the same for a cublasStatus_t.
#define KINDLING_CUBLAS_CHECK(call)                                            \
  do {                                                                         \
    const cublasStatus_t kindling_cublas_status = (call);                      \
    if (ABSL_PREDICT_FALSE(kindling_cublas_status != CUBLAS_STATUS_SUCCESS)) { \
      ::kindling::cuda::internal::CublasCallFailed(__FILE__, __LINE__, #call,  \
                                                   kindling_cublas_status);    \
    }                                                                          \
  } while (false)

// KINDLING_CUDA_CHECK_LAUNCH(kernel) goes right after a <<<...>>> launch:
// it records the kernel's name (a string literal) and aborts on a launch
// error (a bad grid, too much shared memory), which CUDA reports through
// cudaGetLastError(); with KINDLING_CUDA_SYNC_LAUNCHES=1 it also waits for
// the kernel and aborts naming it if it faulted.
#define KINDLING_CUDA_CHECK_LAUNCH(kernel)                                   \
  do {                                                                       \
    ::kindling::cuda::internal::NoteKernelLaunch(kernel);                    \
    KINDLING_CUDA_CHECK(cudaGetLastError());                                 \
    if (ABSL_PREDICT_FALSE(::kindling::cuda::internal::SyncEveryLaunch())) { \
      ::kindling::cuda::internal::SynchronizeAfterLaunch(kernel, __FILE__,   \
                                                         __LINE__);          \
    }                                                                        \
  } while (false)

// KINDLING_CUBLAS_LAUNCH(function, (args...)) calls the cuBLAS function that
// queues device work, recording its name as a launch, and aborts like
// KINDLING_CUBLAS_CHECK unless it succeeded:
//   KINDLING_CUBLAS_LAUNCH(cublasGemmStridedBatchedEx, (handle, ...));
#define KINDLING_CUBLAS_LAUNCH(function, args)                                \
  do {                                                                        \
    ::kindling::cuda::internal::NoteKernelLaunch(#function);                  \
    KINDLING_CUBLAS_CHECK(function args);                                     \
    if (ABSL_PREDICT_FALSE(::kindling::cuda::internal::SyncEveryLaunch())) {  \
      ::kindling::cuda::internal::SynchronizeAfterLaunch(#function, __FILE__, \
                                                         __LINE__);           \
    }                                                                         \
  } while (false)

// KINDLING_CUDA_RETURN_IF_ERROR(call) returns CudaStatus(call, "<call>")
// from the enclosing function unless the call succeeded.
#define KINDLING_CUDA_RETURN_IF_ERROR(call)                            \
  do {                                                                 \
    const cudaError_t kindling_cuda_error = (call);                    \
    if (ABSL_PREDICT_FALSE(kindling_cuda_error != cudaSuccess)) {      \
      return ::kindling::cuda::CudaStatus(kindling_cuda_error, #call); \
    }                                                                  \
  } while (false)

#endif  // KINDLING_BACKEND_CUDA_CUDA_CHECK_H_
