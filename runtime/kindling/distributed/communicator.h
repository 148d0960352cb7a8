// Communicator: the collectives data-parallel training needs, over one of the
// engines the field already trusts: Gloo (TCP; gloo_communicator.h) and MPI
// (shared memory on one machine, the network between machines;
// mpi_communicator.h) for host memory, NCCL for GPU memory.
//
//   absl::StatusOr<std::unique_ptr<Communicator>> comm =
//       kindling::distributed::Connect({});  // from RANK/WORLD_SIZE/... or
//       mpirun
//   KINDLING_RETURN_IF_ERROR((*comm)->AllReduce(grad, ReduceOp::kAverage));
//
// Every collective is called by every rank, in the same order, with the same
// sizes, and returns absl::Status: a peer that is lost (its process ended, its
// connection closed) or silent for longer than the timeout is an error naming
// the operation and, where the engine tells, the rank — never a hang. After a
// collective failed the communicator is broken: every later call returns
// FailedPrecondition at once (a collective cannot be resumed half-way).
//
// Buffers are in-place and contiguous. The byte-level calls are the virtual
// interface an engine implements; the tensor overloads check a tensor's
// device, dtype and layout and name what is wrong.
#ifndef KINDLING_DISTRIBUTED_COMMUNICATOR_H_
#define KINDLING_DISTRIBUTED_COMMUNICATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::distributed {

// ReduceOp: how AllReduce combines the ranks' values. kAverage is the sum
// divided by world_size() (integers: truncated toward zero). kMax serves
// agreements (any rank asked to stop).
enum class ReduceOp { kSum, kAverage, kMax };

// ReduceOpName() is "sum", "average" or "max".
const char* ReduceOpName(ReduceOp op);

// The dtypes AllReduce takes: f32, f64, f16, bf16, i64 (16-bit floats are
// summed in f32 per pair of operands, as NCCL and Gloo do). Broadcast and
// AllGather move bytes and take every dtype.
bool IsReducibleDType(DType dtype);

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // timeout bounds each collective, from its call to its return.
  absl::Duration timeout() const { return timeout_; }
  // backend() names the engine: "gloo", "mpi", "nccl".
  virtual std::string backend() const = 0;
  // Which memory the buffers live in: Device::Cpu() for Gloo and MPI.
  virtual Device device() const = 0;
  // PackBelowBytes(): data parallelism's gradients smaller than this are
  // worth copying into one host buffer to be all-reduced in one call; larger
  // ones cost less all-reduced where they lie, one call each, than copied in
  // and out. By default every gradient is packed (an engine whose calls
  // have a large fixed cost, as Gloo's over TCP).
  virtual int64_t PackBelowBytes() const { return kPackEverything; }
  static constexpr int64_t kPackEverything = INT64_MAX;

  // --- Byte-level collectives (what an engine implements) ----------------
  // AllReduce() combines `count` elements of `dtype` at `data` over all
  // ranks, in place. InvalidArgument for a dtype IsReducibleDType() refuses.
  [[nodiscard]] virtual absl::Status AllReduce(void* data, int64_t count,
                                               DType dtype, ReduceOp op) = 0;
  // Broadcast() copies `bytes` bytes at `data` from rank `root` to all.
  [[nodiscard]] virtual absl::Status Broadcast(void* data, int64_t bytes,
                                               int root) = 0;
  // AllGather() writes each rank's `bytes` bytes from `in` to `out` at
  // offset rank * bytes; `out` holds world_size() * bytes.
  [[nodiscard]] virtual absl::Status AllGather(const void* in, void* out,
                                               int64_t bytes) = 0;
  // Barrier() returns once every rank has called it.
  [[nodiscard]] virtual absl::Status Barrier() = 0;

  // --- Host buffers, whatever the engine's memory -------------------------
  // AllReduceHost() and BroadcastHost() are AllReduce() and Broadcast() of
  // a buffer in host memory: the small agreements (a step's loss, a model's
  // signature) every engine must carry. A GPU engine stages the buffer
  // through its device's memory.
  [[nodiscard]] absl::Status AllReduceHost(void* data, int64_t count,
                                           DType dtype, ReduceOp op);
  [[nodiscard]] absl::Status BroadcastHost(void* data, int64_t bytes, int root);

  // --- Tensor collectives --------------------------------------------------
  // `tensor` must be defined, contiguous, on device() and (AllReduce) of a
  // reducible dtype; otherwise InvalidArgument naming the operation and what
  // is wrong, with nothing sent.
  [[nodiscard]] absl::Status AllReduce(const TensorBase& tensor, ReduceOp op);
  [[nodiscard]] absl::Status Broadcast(const TensorBase& tensor, int root);
  // AllGather(): `out` has `in`'s dtype and world_size() * in.numel()
  // elements (any shape).
  [[nodiscard]] absl::Status AllGather(const TensorBase& in,
                                       const TensorBase& out);

 protected:
  Communicator(int rank, int world_size, absl::Duration timeout)
      : rank_(rank), world_size_(world_size), timeout_(timeout) {}

  // CheckRoot() is InvalidArgument unless 0 <= root < world_size().
  absl::Status CheckRoot(int root, const char* operation) const;

 private:
  absl::Status CheckBuffer(const TensorBase& tensor,
                           const char* operation) const;

  int rank_;
  int world_size_;
  absl::Duration timeout_;
};

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_COMMUNICATOR_H_
