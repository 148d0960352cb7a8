#include "kindling/backend/cuda/cuda_context.h"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/index_fault.h"
#include "kindling/core/check.h"

namespace kindling::cuda {
namespace {

// Device indices beyond this abort; MemoryStats has the same bound.
constexpr int kMaxDevices = 64;

// The handles a thread holds, one per device; they go back to the pool when
// the thread exits instead of being destroyed (see the header).
struct CublasPool {
  std::mutex mutex;
  std::array<std::vector<cublasHandle_t>, kMaxDevices> free_handles;
};

CublasPool& TheCublasPool() {
  static CublasPool* pool = new CublasPool;
  return *pool;
}

struct ThreadCublasHandles {
  std::array<cublasHandle_t, kMaxDevices> handles{};
  ~ThreadCublasHandles() {
    CublasPool& pool = TheCublasPool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    for (int index = 0; index < kMaxDevices; ++index) {
      if (handles[index] != nullptr) {
        pool.free_handles[index].push_back(handles[index]);
      }
    }
  }
};

thread_local ThreadCublasHandles thread_cublas_handles;

// The host address of the IndexFault records (null until the first kernel
// asks for one), so that taking a fault never allocates them.
std::atomic<IndexFault*> host_index_faults{nullptr};
thread_local std::array<cudaStream_t, kMaxDevices> thread_streams{};

// What CUDA said when first asked for its devices.
struct CudaProbe {
  absl::Status status;
  int devices = 0;
};

// DriverLibraryError() is "" when the NVIDIA driver's library loads, else
// dlerror()'s reason. The CUDA runtime reports a missing driver as
// cudaErrorInsufficientDriver, the same code as a driver too old for it, so
// the library is looked for first to tell the two apart.
std::string DriverLibraryError() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) {
    const char* reason = dlerror();
    return reason != nullptr ? reason : "libcuda.so.1: cannot be loaded";
  }
  // Left loaded: the CUDA runtime loads the same library.
  return "";
}

CudaProbe ProbeCuda() {
  CudaProbe probe;
  int devices = 0;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  if (error == cudaSuccess && devices > 0) {
    probe.devices = devices < kMaxDevices ? devices : kMaxDevices;
    return probe;
  }
  // Clear the error so later calls don't see it.
  (void)cudaGetLastError();
  if (error == cudaSuccess || error == cudaErrorNoDevice) {
    probe.status = absl::NotFoundError(
        "no CUDA device visible: the NVIDIA driver reports no device");
    return probe;
  }
  const std::string driver_error = DriverLibraryError();
  if (error == cudaErrorInsufficientDriver && !driver_error.empty()) {
    probe.status = absl::NotFoundError(absl::StrFormat(
        "no CUDA device visible: no NVIDIA driver installed (%s)",
        driver_error));
    return probe;
  }
  int driver_version = 0;
  int runtime_version = 0;
  (void)cudaDriverGetVersion(&driver_version);
  (void)cudaRuntimeGetVersion(&runtime_version);
  (void)cudaGetLastError();
  probe.status = absl::FailedPreconditionError(absl::StrFormat(
      "CUDA failed to initialize: %s: %s (cudaGetDeviceCount; driver "
      "supports CUDA %d.%d, runtime is CUDA %d.%d)",
      cudaGetErrorName(error), cudaGetErrorString(error), driver_version / 1000,
      driver_version % 1000 / 10, runtime_version / 1000,
      runtime_version % 1000 / 10));
  return probe;
}

const CudaProbe& TheCudaProbe() {
  static const CudaProbe* probe = new CudaProbe(ProbeCuda());
  return *probe;
}

}  // namespace

const absl::Status& CudaAvailability() { return TheCudaProbe().status; }

int CudaDeviceCount() { return TheCudaProbe().devices; }

GpuCheck CheckCudaDevices(int needed) {
  return DecideGpuCheck(CudaAvailability(), CudaDeviceCount(), RequiredGpus(),
                        needed);
}

void CheckCudaDeviceIndex(int index) {
  const int count = CudaDeviceCount();
  KINDLING_CHECK(index >= 0 && index < count,
                 "cuda:%d does not exist: %d CUDA device(s) visible%s", index,
                 count,
                 CudaAvailability().ok()
                     ? ""
                     : " (" + std::string(CudaAvailability().message()) + ")");
}

CudaDeviceGuard::CudaDeviceGuard(int index) : previous_(-1), current_(index) {
  CheckCudaDeviceIndex(index);
  KINDLING_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != index) KINDLING_CUDA_CHECK(cudaSetDevice(index));
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ != current_) KINDLING_CUDA_CHECK(cudaSetDevice(previous_));
}

cudaStream_t DefaultCudaStream(int index) {
  CheckCudaDeviceIndex(index);
  static std::array<std::once_flag, kMaxDevices> created;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  std::call_once(created[index], [index] {
    CudaDeviceGuard guard(index);
    KINDLING_CUDA_CHECK(
        cudaStreamCreateWithFlags(&streams[index], cudaStreamNonBlocking));
  });
  return streams[index];
}

cudaStream_t CurrentCudaStream(int index) {
  CheckCudaDeviceIndex(index);
  cudaStream_t stream = thread_streams[index];
  return stream != nullptr ? stream : DefaultCudaStream(index);
}

void SetCurrentCudaStream(int index, cudaStream_t stream) {
  CheckCudaDeviceIndex(index);
  thread_streams[index] = stream;
}

CudaStreamGuard::CudaStreamGuard(int index, cudaStream_t stream)
    : index_(index) {
  CheckCudaDeviceIndex(index);
  previous_ = thread_streams[index];
  thread_streams[index] = stream;
}

CudaStreamGuard::~CudaStreamGuard() { thread_streams[index_] = previous_; }

cublasHandle_t CublasHandle(int index) {
  CheckCudaDeviceIndex(index);
  cublasHandle_t& handle = thread_cublas_handles.handles[index];
  if (handle == nullptr) {
    CublasPool& pool = TheCublasPool();
    {
      std::lock_guard<std::mutex> lock(pool.mutex);
      if (!pool.free_handles[index].empty()) {
        handle = pool.free_handles[index].back();
        pool.free_handles[index].pop_back();
      }
    }
    if (handle == nullptr) {
      CudaDeviceGuard guard(index);
      KINDLING_CUBLAS_CHECK(cublasCreate(&handle));
    }
  }
  KINDLING_CUBLAS_CHECK(cublasSetStream(handle, CurrentCudaStream(index)));
  return handle;
}

IndexFaultSink IndexFaultSinkFor(int index, const char* op) {
  CheckCudaDeviceIndex(index);
  // One array for every device, allocated once: pinned, mapped into every
  // device's address space (portable), never freed (see the header).
  static IndexFault* records = [] {
    void* host = nullptr;
    KINDLING_CUDA_CHECK(
        cudaHostAlloc(&host, kMaxDevices * sizeof(IndexFault),
                      cudaHostAllocMapped | cudaHostAllocPortable));
    auto* faults = static_cast<IndexFault*>(host);
    for (int i = 0; i < kMaxDevices; ++i) faults[i] = IndexFault{};
    host_index_faults.store(faults);
    return faults;
  }();
  // The device's address of its record, looked up once per device.
  static std::array<std::once_flag, kMaxDevices> looked_up;
  static std::array<IndexFault*, kMaxDevices> device_records{};
  std::call_once(looked_up[index], [index] {
    CudaDeviceGuard guard(index);
    void* device_record = nullptr;
    KINDLING_CUDA_CHECK(
        cudaHostGetDevicePointer(&device_record, records + index, 0));
    device_records[index] = static_cast<IndexFault*>(device_record);
  });
  return IndexFaultSink{device_records[index], op};
}

std::string TakeCudaIndexFault(int index) {
  IndexFault* records = host_index_faults.load();
  if (records == nullptr) return "";  // no kernel has checked an index yet
  // Two host threads syncing at once must not both report (or tear) one
  // fault.
  static std::mutex* take_mutex = new std::mutex;
  std::lock_guard<std::mutex> lock(*take_mutex);
  return TakeIndexFault(records[index], absl::StrFormat("cuda:%d", index));
}

void CheckNoCudaIndexFault(int index) {
  const std::string fault = TakeCudaIndexFault(index);
  KINDLING_CHECK(fault.empty(), "%s", fault);
}

absl::Status SynchronizeCudaDevice(int index) {
  CudaDeviceGuard guard(index);
  absl::Status status =
      CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (!status.ok()) return status;
  const std::string fault = TakeCudaIndexFault(index);
  if (!fault.empty()) return absl::OutOfRangeError(fault);
  return absl::OkStatus();
}

}  // namespace kindling::cuda
