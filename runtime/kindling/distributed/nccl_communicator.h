// The NCCL communicator: collectives between GPUs (NVLink, PCIe, InfiniBand
// or TCP, as NCCL finds them), on buffers in the memory of one CUDA device.
// Built only with --config=cuda (it links libnccl).
//
//   absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectNccl({
//       .rank = 1, .world_size = 2, .device_index = 1,
//       .store = {.host = "10.0.0.1", .port = 29500}});
//   KINDLING_RETURN_IF_ERROR((*comm)->AllReduce(grad, ReduceOp::kAverage));
//
// One communicator per device: each rank drives one GPU (device_index), and
// every buffer it passes lives in that GPU's memory (device() is
// Device::Cuda(device_index); the tensor overloads refuse a tensor elsewhere,
// naming both devices).
//
// Rendezvous goes through the TcpStore (tcp_store.h) as for Gloo: rank 0
// hosts it at store.host:store.port, rank 0 publishes NCCL's unique id there
// and every other rank reads it; NCCL then connects the ranks by itself. The
// store stays connected so that a failure can name the rank whose process
// ended.
//
// Streams: a collective is enqueued on the calling thread's current stream of
// the device (kindling/backend/cuda/cuda_context.h), so it runs after the
// kernels that produced its input (the gradients) without any extra
// synchronization, and later kernels on that stream see its result.
//
// Each collective waits for that stream before it returns: the Communicator
// contract is that the data is there on return (a caller may read it from the
// host, or free it, or hand it to another stream), and waiting is also how a
// collective that never completes (a peer that died or hangs) becomes an
// error instead of a hang. The wait covers the work queued before the
// collective on that stream as well, so the timeout bounds both.
//
// Failures: NCCL runs non-blocking (ncclConfig_t::blocking = 0), and the wait
// polls the stream and ncclCommGetAsyncError() until done or timeout(). On an
// error or at the deadline the NCCL communicator is aborted (ncclCommAbort,
// which stops its kernels) and the error names the operation (the deadline
// as DeadlineExceeded); every later call returns FailedPrecondition.
#ifndef KINDLING_DISTRIBUTED_NCCL_COMMUNICATOR_H_
#define KINDLING_DISTRIBUTED_NCCL_COMMUNICATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {

struct NcclOptions {
  int rank = 0;
  int world_size = 1;
  // device_index: the CUDA device this rank's buffers live on and NCCL
  // drives (usually the local rank).
  int device_index = 0;
  // store: where rank 0 hosts the rendezvous store (it binds store.host),
  // its timeout (connecting, and NCCL's initialization) and shared secret.
  StoreOptions store{};
  // timeout bounds each collective, from its call to its return.
  absl::Duration timeout = absl::Minutes(5);
};

// ConnectNccl() checks the device, starts the store (rank 0), connects to it,
// shares NCCL's unique id through it and initializes the NCCL communicator
// on device_index, all within store.timeout. InvalidArgument for a bad rank,
// world size or device index (naming the visible devices); CUDA's reason when
// no device is usable; the store's or NCCL's error otherwise
// (DeadlineExceeded when a rank did not join in time).
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> ConnectNccl(
    const NcclOptions& options);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_NCCL_COMMUNICATOR_H_
