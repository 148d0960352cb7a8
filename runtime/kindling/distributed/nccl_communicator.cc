#include "kindling/distributed/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/rendezvous.h"
#include "kindling/tensor/device.h"

namespace kindling::distributed {
namespace {

// The store key rank 0 publishes NCCL's unique id under.
constexpr char kUniqueIdKey[] = "kindling/nccl/id";

// NcclMessage() is the name of `result` and NCCL's description of the last
// error (which says what failed, e.g. which peer's connection closed).
std::string NcclMessage(ncclResult_t result) {
  // ncclGetLastError() ignores its communicator argument.
  const char* last = ncclGetLastError(nullptr);
  std::string message = ncclGetErrorString(result);
  if (last != nullptr && last[0] != '\0') absl::StrAppend(&message, ": ", last);
  return message;
}

// NcclStatus() maps an NCCL error to a status code: a peer or the network
// failing is Unavailable (as Gloo's errors), a bad call InvalidArgument.
absl::Status NcclStatus(ncclResult_t result, const std::string& context) {
  const std::string message = absl::StrCat(context, ": ", NcclMessage(result));
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(message);
    case ncclRemoteError:
    case ncclSystemError:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

// ToNcclType() is false for a dtype NCCL does not reduce for us
// (IsReducibleDType() says the same).
bool ToNcclType(DType dtype, ncclDataType_t* type) {
  switch (dtype) {
    case DType::kF32:
      *type = ncclFloat;
      return true;
    case DType::kF64:
      *type = ncclDouble;
      return true;
    case DType::kF16:
      *type = ncclHalf;
      return true;
    case DType::kBF16:
      *type = ncclBfloat16;
      return true;
    case DType::kI64:
      *type = ncclInt64;
      return true;
    default:
      return false;
  }
}

// ncclAvg divides the sum by the number of ranks in NCCL's kernels (integers
// truncated toward zero, floats scaled by 1/n), so no second pass is needed.
ncclRedOp_t ToNcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

// Backoff paces a polling loop: it spins (yielding) first, because a small
// collective finishes within microseconds, then sleeps, so a long one (a
// large gradient, or a peer that is late) does not burn a core.
class Backoff {
 public:
  void Pause() {
    if (++rounds_ <= kSpinRounds) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(absl::Microseconds(50));
    }
  }

 private:
  static constexpr int kSpinRounds = 256;
  int rounds_ = 0;
};

// WaitForNcclState() polls a non-blocking communicator until its pending
// call (initialization, an enqueue, finalization) is done: its state, or
// ncclInProgress when `deadline` passed first.
ncclResult_t WaitForNcclState(ncclComm_t comm, absl::Time deadline) {
  Backoff backoff;
  while (true) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
    if (queried != ncclSuccess) return queried;
    if (state != ncclInProgress) return state;
    if (absl::Now() >= deadline) return ncclInProgress;
    backoff.Pause();
  }
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const NcclOptions& options,
                   std::unique_ptr<TcpStoreServer> server,
                   std::unique_ptr<TcpStoreClient> store, ncclComm_t comm,
                   float* barrier_buffer)
      : Communicator(options.rank, options.world_size, options.timeout),
        device_index_(options.device_index),
        server_(std::move(server)),
        store_(std::move(store)),
        comm_(comm),
        barrier_buffer_(barrier_buffer) {}

  // The destructor finalizes NCCL (it flushes the communicator and waits
  // until the peers are quiescent), bounded by timeout(); a communicator
  // that is broken, fails to finalize or outlasts that is aborted instead,
  // so destruction never hangs on a lost peer.
  ~NcclCommunicator() override {
    absl::MutexLock lock(&mutex_);
    cuda::CudaDeviceGuard device(device_index_);
    if (comm_ != nullptr) {
      ncclResult_t result = ncclCommFinalize(comm_);
      if (result == ncclSuccess || result == ncclInProgress) {
        result = WaitForNcclState(comm_, absl::Now() + timeout());
      }
      if (result == ncclSuccess) {
        (void)ncclCommDestroy(comm_);
      } else {
        (void)ncclCommAbort(comm_);
      }
      comm_ = nullptr;
    }
    // Nothing can be done about a failed free in a destructor; an error
    // here is an earlier asynchronous one, already reported by the call
    // that met it.
    (void)cudaFree(barrier_buffer_);
  }

  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::Cuda(device_index_); }

  absl::Status AllReduce(void* data, int64_t count, DType dtype,
                         ReduceOp op) override {
    ncclDataType_t type;
    if (!ToNcclType(dtype, &type)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AllReduce: dtype %s cannot be reduced",
                          std::string(DTypeName(dtype))));
    }
    if (count < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AllReduce: negative count %d", count));
    }
    return Run("AllReduce", count, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(data, data, static_cast<size_t>(count), type,
                           ToNcclOp(op), comm, stream);
    });
  }

  absl::Status Broadcast(void* data, int64_t bytes, int root) override {
    KINDLING_RETURN_IF_ERROR(CheckRoot(root, "Broadcast"));
    if (bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Broadcast: negative size %d", bytes));
    }
    return Run("Broadcast", bytes, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclBroadcast(data, data, static_cast<size_t>(bytes), ncclUint8,
                           root, comm, stream);
    });
  }

  absl::Status AllGather(const void* in, void* out, int64_t bytes) override {
    if (bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AllGather: negative size %d", bytes));
    }
    return Run("AllGather", bytes, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllGather(in, out, static_cast<size_t>(bytes), ncclUint8, comm,
                           stream);
    });
  }

  // Barrier(): NCCL has none; an all-reduce of one element completes on a
  // rank only once every rank has contributed, and Run() waits for it.
  absl::Status Barrier() override {
    return Run("Barrier", 1, [&](ncclComm_t comm, cudaStream_t stream) {
      return ncclAllReduce(barrier_buffer_, barrier_buffer_, 1, ncclFloat,
                           ncclSum, comm, stream);
    });
  }

 private:
  // Run() enqueues one collective on this thread's current stream of the
  // device and waits for it (see the header: the data is there on return,
  // and the wait is where a lost peer becomes an error). `size` is what the
  // message reports; 0 calls nothing (every rank sees the same size).
  template <class Enqueue>
  absl::Status Run(const char* operation, int64_t size, Enqueue&& enqueue) {
    absl::MutexLock lock(&mutex_);
    if (!broken_.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          operation, ": the communicator is broken by an earlier failure (",
          broken_.message(), ")"));
    }
    if (size == 0) return absl::OkStatus();
    const absl::Time deadline = absl::Now() + timeout();
    cuda::CudaDeviceGuard device(device_index_);
    const cudaStream_t stream = cuda::CurrentCudaStream(device_index_);
    const ncclResult_t enqueued = enqueue(comm_, stream);
    if (enqueued != ncclSuccess && enqueued != ncclInProgress) {
      return Break(NcclStatus(enqueued, Describe(operation, size)));
    }
    return Wait(operation, size, stream, deadline);
  }

  // Wait() polls until NCCL has enqueued the collective (non-blocking
  // mode may still be connecting channels on return) and the stream has run
  // it, an error, or the deadline.
  absl::Status Wait(const char* operation, int64_t size, cudaStream_t stream,
                    absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    Backoff backoff;
    while (true) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
      if (queried != ncclSuccess) state = queried;
      if (state != ncclSuccess && state != ncclInProgress) {
        return Break(NcclStatus(state, Describe(operation, size)));
      }
      if (state == ncclSuccess) {
        const cudaError_t done = cudaStreamQuery(stream);
        if (done == cudaSuccess) return absl::OkStatus();
        if (done != cudaErrorNotReady) {
          const absl::Status error = cuda::CudaStatus(done, "cudaStreamQuery");
          return Break(absl::Status(
              error.code(),
              absl::StrCat(Describe(operation, size),
                           ": the stream failed: ", error.message())));
        }
      }
      if (absl::Now() >= deadline) {
        return Break(absl::DeadlineExceededError(absl::StrFormat(
            "%s: not done within the timeout of %s (a peer may be lost or "
            "late, or the work queued before it on the stream is slow)",
            Describe(operation, size), absl::FormatDuration(timeout()))));
      }
      backoff.Pause();
    }
  }

  std::string Describe(const char* operation, int64_t size) const {
    return absl::StrFormat("%s (%d) on rank %d of %d (cuda:%d) failed",
                           operation, size, rank(), world_size(),
                           device_index_);
  }

  // Break() aborts NCCL, which stops its kernels that wait for peers (so
  // the stream drains and the device stays usable), and marks the
  // communicator broken with `error` plus the lost peer, if the store knows
  // one.
  absl::Status Break(const absl::Status& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
    broken_ = absl::Status(
        error.code(), absl::StrCat(error.message(), DescribeLostPeer(*store_),
                                   "; the NCCL communicator was aborted"));
    return broken_;
  }

  const int device_index_;
  absl::Mutex mutex_;
  absl::Status broken_ ABSL_GUARDED_BY(mutex_);
  // Declared first, destroyed last: the store outlives NCCL.
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStoreClient> store_;
  ncclComm_t comm_ ABSL_GUARDED_BY(mutex_);
  // One float on the device, all-reduced by Barrier().
  float* const barrier_buffer_;
};

// ShareUniqueId() is NCCL's unique id: made by rank 0 and published in the
// store, read from there by the others (waiting up to the store's timeout).
absl::StatusOr<ncclUniqueId> ShareUniqueId(const NcclOptions& options,
                                           TcpStoreClient& store) {
  ncclUniqueId id;
  if (options.rank == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      return NcclStatus(result, "ConnectNccl: ncclGetUniqueId");
    }
    KINDLING_RETURN_IF_ERROR(
        store.Set(kUniqueIdKey, std::string(id.internal, sizeof(id.internal))));
    return id;
  }
  absl::StatusOr<std::string> bytes = store.Get(kUniqueIdKey);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() != sizeof(id.internal)) {
    return absl::DataLossError(absl::StrFormat(
        "ConnectNccl: the NCCL id in the store has %d bytes, not %d (another "
        "NCCL version on rank 0?)",
        bytes->size(), sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes->data(), sizeof(id.internal));
  return id;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> ConnectNccl(
    const NcclOptions& options) {
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ConnectNccl: rank %d is not in a world of %d ranks",
                        options.rank, options.world_size));
  }
  // The device first: a rank without its GPU should say so before it makes
  // the others wait for it at the store.
  const absl::Status& available = cuda::CudaAvailability();
  if (!available.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ConnectNccl: rank %d needs cuda:%d, but %s", options.rank,
        options.device_index, std::string(available.message())));
  }
  const int devices = cuda::CudaDeviceCount();
  if (options.device_index < 0 || options.device_index >= devices) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ConnectNccl: rank %d asks for cuda:%d, but %d CUDA device(s) are "
        "visible",
        options.rank, options.device_index, devices));
  }

  absl::StatusOr<Rendezvous> rendezvous =
      JoinRendezvous(options.store, options.rank);
  if (!rendezvous.ok()) return rendezvous.status();
  const StoreOptions& client_options = rendezvous->where;
  TcpStoreClient& store = *rendezvous->store;

  // NCCL binds a communicator to the device current at its creation.
  cuda::CudaDeviceGuard device(options.device_index);
  absl::StatusOr<ncclUniqueId> id = ShareUniqueId(options, store);
  if (!id.ok()) return id.status();

  const std::string where =
      absl::StrFormat("rank %d of %d on cuda:%d, store at %s:%d", options.rank,
                      options.world_size, options.device_index,
                      client_options.host, client_options.port);
  // Non-blocking, so that initialization (which waits for every rank) and
  // later collectives can be given up at a deadline instead of hanging.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRankConfig(&comm, options.world_size, *id,
                                               options.rank, &config);
  if (result == ncclSuccess || result == ncclInProgress) {
    result = WaitForNcclState(comm, absl::Now() + options.store.timeout);
  }
  if (result != ncclSuccess) {
    const absl::Status error =
        result == ncclInProgress
            ? absl::DeadlineExceededError(absl::StrFormat(
                  "ConnectNccl: NCCL's initialization (%s) did not finish "
                  "within %s: a rank did not join",
                  where, absl::FormatDuration(options.store.timeout)))
            : NcclStatus(result, absl::StrCat("ConnectNccl: NCCL's "
                                              "initialization (",
                                              where, ")"));
    if (comm != nullptr) (void)ncclCommAbort(comm);
    return error;
  }

  float* barrier_buffer = nullptr;
  cudaError_t allocated = cudaMalloc(&barrier_buffer, sizeof(float));
  if (allocated == cudaSuccess) {
    // Barrier() sums it every time: start from a number, not garbage.
    allocated = cudaMemset(barrier_buffer, 0, sizeof(float));
  }
  if (allocated != cudaSuccess) {
    (void)ncclCommAbort(comm);
    (void)cudaFree(barrier_buffer);
    return cuda::CudaStatus(allocated, "ConnectNccl: the barrier's buffer");
  }
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(options, std::move(rendezvous->server),
                           std::move(rendezvous->store), comm, barrier_buffer));
}

}  // namespace kindling::distributed
