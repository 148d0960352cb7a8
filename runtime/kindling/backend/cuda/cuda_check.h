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
// unrelated call (usually a synchronize). KINDLING_CUDA_CHECK_LAUNCH records
// the name of the last kernel launched on each thread, and the messages of
// CudaStatus() and the aborts name it, so "cudaErrorIllegalAddress at
// cudaDeviceSynchronize" also says which launch came last; run with
// CUDA_LAUNCH_BLOCKING=1 to make every launch synchronous and the check
// right after it name the kernel exactly.
#ifndef KINDLING_BACKEND_CUDA_CUDA_CHECK_H_
#define KINDLING_BACKEND_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>

#include "absl/base/optimization.h"
#include "absl/status/status.h"

namespace kindling::cuda {

// CudaStatus() is OK for cudaSuccess, else an error naming `call`, the
// error's name and description and the last kernel launched on this thread.
// Out of memory maps to ResourceExhausted, no device or driver to
// FailedPrecondition, invalid arguments to InvalidArgument, anything else to
// Internal.
[[nodiscard]] absl::Status CudaStatus(cudaError_t error, std::string_view call);

// CublasStatus() is the same for a cuBLAS status code.
[[nodiscard]] absl::Status CublasStatus(cublasStatus_t status,
                                        std::string_view call);

namespace internal {

// Abort with "kindling: <file>:<line>: <call> failed: <name>: <description>".
[[noreturn]] void CudaCallFailed(const char* file, int line, const char* call,
                                 cudaError_t error);
[[noreturn]] void CublasCallFailed(const char* file, int line, const char* call,
                                   cublasStatus_t status);

// NoteKernelLaunch() records `kernel` (a string literal) as this thread's
// last launch; LastKernelLaunch() reads it ("none" before any).
void NoteKernelLaunch(const char* kernel);
const char* LastKernelLaunch();

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
// it records the kernel's name and aborts on a launch error (a bad grid, too
// much shared memory), which CUDA reports through cudaGetLastError().
#define KINDLING_CUDA_CHECK_LAUNCH(kernel)                \
  do {                                                    \
    ::kindling::cuda::internal::NoteKernelLaunch(kernel); \
    KINDLING_CUDA_CHECK(cudaGetLastError());              \
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
