// The CUDA execution context: devices, the current stream, cuBLAS handles.
//
// Kindling's execution model on a GPU. Every op enqueues work on the current
// stream of its device and returns without waiting; results are ordered on
// that stream, so a chain of ops on one thread needs no synchronization.
// The host waits only where it needs bytes (a copy to host memory) or asks
// to (DeviceMemory::Synchronize), and that is where asynchronous errors
// surface as a Status (cuda_check.h).
//
//   * The current stream is per device and per thread. By default it is one
//     non-blocking stream per device shared by every thread (created on first
//     use, never destroyed), so ops from different threads on one device are
//     ordered with each other, like a single queue; SetCurrentCudaStream() or a
//     CudaStreamGuard gives a thread a stream of its own. Non-blocking: the
//     legacy default stream (0) never implicitly serializes with it.
//   * Tensors may cross streams. Memory is allocated on the current stream,
//     and every op and copy records the blocks it uses on the stream it
//     enqueues on (CudaAllocator::RecordStream), so a tensor freed while work
//     on another stream still uses it is not reused before that work has
//     run; ordering the work itself (a read on one stream after a write on
//     another) is the caller's, with events or a synchronize. While every
//     thread stays on the default stream the records cost nothing.
//   * CudaDeviceGuard sets the calling thread's current device for a scope
//     and restores the previous one; every entry point that touches a device
//     sets it first, so callers never need cudaSetDevice.
//   * CublasHandle() gives a cuBLAS handle for a device bound to the current
//     stream. Handles are per thread (a cuBLAS handle bound to a stream must
//     not be shared by threads using different streams) and recycled through a
//     per-device pool when a thread exits, so there are at most as many as
//     threads that ever used cuBLAS at the same time.
//
// Nothing here is ever destroyed: streams, handles and pools live until the
// process exits, because destroying them from static destructors can run
// after the CUDA runtime has shut down.
//
// Thread safety: every function may be called from any thread.
#ifndef KINDLING_BACKEND_CUDA_CUDA_CONTEXT_H_
#define KINDLING_BACKEND_CUDA_CUDA_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "absl/status/status.h"
#include "kindling/backend/cuda/gpu_requirement.h"
#include "kindling/backend/cuda/index_fault.h"

namespace kindling::cuda {

// CudaAvailability() says whether this process can use CUDA, probed once:
//   * OK: at least one device is visible (CudaDeviceCount() of them);
//   * NotFound: "no CUDA device visible: ...": no NVIDIA driver is installed
//     (libcuda.so.1 cannot be loaded) or the driver sees no device (none
//     present, CUDA_VISIBLE_DEVICES empty, MIG without an instance);
//   * FailedPrecondition: "CUDA failed to initialize: <error name>: ...":
//     a driver is there but CUDA cannot use it (driver older than the
//     runtime, driver/library mismatch, devices busy or unavailable, ...).
// Tests and benches must tell the two failures apart: the first is a machine
// without a GPU, the second a broken GPU machine, which must never look like
// "all skipped, all green" (gpu_requirement.h).
[[nodiscard]] const absl::Status& CudaAvailability();

// CheckCudaDevices() decides whether a GPU test or benchmark needing
// `needed` devices runs, skips or fails in this process
// (gpu_requirement.h: DecideGpuCheck with CudaAvailability(),
// CudaDeviceCount() and KINDLING_REQUIRE_GPU).
GpuCheck CheckCudaDevices(int needed = 1);

// CudaDeviceCount() is the number of usable CUDA devices: 0, without
// aborting, whenever CudaAvailability() is not OK.
int CudaDeviceCount();

// CheckCudaDeviceIndex() aborts, naming the index and the device count,
// unless 0 <= index < CudaDeviceCount().
void CheckCudaDeviceIndex(int index);

// CudaDeviceGuard makes `index` the current device of this thread for its
// lifetime and then restores the previous one.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int index);
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  ~CudaDeviceGuard();

 private:
  int previous_;
  int current_;
};

// DefaultCudaStream() is the process-wide non-blocking stream of device
// `index`, created on first use.
cudaStream_t DefaultCudaStream(int index);

// CurrentCudaStream() is this thread's current stream on device `index`:
// DefaultCudaStream(index) unless SetCurrentCudaStream() chose another.
cudaStream_t CurrentCudaStream(int index);

// SetCurrentCudaStream() makes `stream` (created on device `index`, owned by
// the caller) this thread's current stream on `index`; nullptr goes back to
// DefaultCudaStream(index). REQUIRES: `stream` stays alive while current, and
// until every tensor that work on it used has been freed (the free records
// an event on it); the same holds for CudaStreamGuard.
void SetCurrentCudaStream(int index, cudaStream_t stream);

// CudaStreamGuard sets this thread's current stream on a device for its
// lifetime and then restores the previous one.
class CudaStreamGuard {
 public:
  CudaStreamGuard(int index, cudaStream_t stream);
  CudaStreamGuard(const CudaStreamGuard&) = delete;
  CudaStreamGuard& operator=(const CudaStreamGuard&) = delete;
  ~CudaStreamGuard();

 private:
  int index_;
  cudaStream_t previous_;
};

// CublasHandle() is this thread's cuBLAS handle for device `index`, bound to
// CurrentCudaStream(index). Call it with `index` current (CudaDeviceGuard).
cublasHandle_t CublasHandle(int index);

// IndexFaultSinkFor() is what a kernel of `op` (a string literal) on device
// `index` needs to report an out-of-range index (index_fault.h); the records
// are allocated on first use.
IndexFaultSink IndexFaultSinkFor(int index, const char* op);

// TakeCudaIndexFault() returns and clears the message of the first
// out-of-range index a kernel on device `index` met, or "" when none did.
// Call it only after waiting for the device's work. The record is per
// device, not per stream: after waiting for one stream it may report a
// fault of another stream of the same device (never a half-written one).
std::string TakeCudaIndexFault(int index);

// CheckNoCudaIndexFault() aborts with TakeCudaIndexFault()'s message, if any:
// the check after a host wait that has no Status to return (a copy to host).
void CheckNoCudaIndexFault(int index);

// SynchronizeCudaDevice() waits until all work queued on device `index`, on
// every stream, has finished; an asynchronous error of that work comes back
// as a Status naming cudaDeviceSynchronize and the last kernel launched on
// this thread, and an out-of-range index a kernel met as OutOfRange naming
// the op, the index and the range (index_fault.h).
[[nodiscard]] absl::Status SynchronizeCudaDevice(int index);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_CUDA_CONTEXT_H_
