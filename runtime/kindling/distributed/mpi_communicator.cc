#include "kindling/distributed/mpi_communicator.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/reduce_math.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"

namespace kindling::distributed {
namespace {

// The poll of a started collective. Open MPI progresses a non-blocking
// collective only inside MPI calls, step by step (each shared-memory
// fragment, each round of the algorithm), so a rank that sleeps while its
// peers are present stretches the transfer: a 1.3 MB AllReduce went from
// ~1.3 ms to ~10 ms with naps alone. So the poll spins (MPI_Test back to
// back) while data could be moving: for kSpinFor plus kSpinPerByte per byte
// the call moves (a slow shared-memory speed), and again for kSpinFor after
// any MPI_Test that took over kWorkingTest (an idle test takes ~40 ns; one
// that copies or reduces a fragment takes microseconds, a sign that the
// peers are here). Only then does it sleep, from kFirstNap doubling up to
// kLongestNap, so a rank waiting for a late peer costs a test every ~0.2 ms
// rather than a core the compute threads need.
constexpr absl::Duration kSpinFor = absl::Microseconds(100);
constexpr absl::Duration kSpinPerByte = absl::Nanoseconds(1);
constexpr absl::Duration kWorkingTest = absl::Microseconds(1);
constexpr absl::Duration kYieldFor = absl::Milliseconds(20);
constexpr absl::Duration kFirstNap = absl::Microseconds(50);
constexpr absl::Duration kLongestNap = absl::Microseconds(200);

// The exit status of a job that MPI_Abort ends after a failed collective.
constexpr int kAbortErrorCode = 70;

// MpiProcess: what MPI keeps per process. Leaked, so that the atexit handler
// and communicators destroyed during static destruction can still read it.
struct MpiProcess {
  absl::Mutex init_mu;
  bool init_attempted ABSL_GUARDED_BY(init_mu) = false;
  absl::Status init_status ABSL_GUARDED_BY(init_mu);
  // Set once by the first ConnectMpi(), read-only afterwards.
  int thread_level = -1;
  bool serialize_calls = false;
  MPI_Op half_sum = MPI_OP_NULL;
  MPI_Op half_max = MPI_OP_NULL;
  MPI_Op bfloat16_sum = MPI_OP_NULL;
  MPI_Op bfloat16_max = MPI_OP_NULL;
  // Set when a collective failed: the exit aborts the job instead of
  // finalizing (see the header).
  std::atomic<bool> collective_failed{false};
  // Serializes MPI calls when MPI gave only MPI_THREAD_SERIALIZED.
  absl::Mutex call_mu;
};

MpiProcess& Process() {
  static MpiProcess* const process = new MpiProcess;
  return *process;
}

// MpiCallLock holds Process().call_mu around one MPI call when MPI is not
// thread-safe by itself (below MPI_THREAD_MULTIPLE), and nothing otherwise
// (so it carries no lock annotations: the locking is conditional).
class MpiCallLock {
 public:
  MpiCallLock()
      : mu_(Process().serialize_calls ? &Process().call_mu : nullptr) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~MpiCallLock() {
    if (mu_ != nullptr) mu_->Unlock();
  }
  MpiCallLock(const MpiCallLock&) = delete;
  MpiCallLock& operator=(const MpiCallLock&) = delete;

 private:
  absl::Mutex* const mu_;
};

std::string ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return absl::StrFormat("thread level %d", level);
}

// MpiError() turns an MPI error code into a Status saying what failed.
absl::Status MpiError(int code, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  std::string message = "unknown MPI error";
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS) {
    message.assign(text, length);
  }
  int error_class = MPI_ERR_OTHER;
  MPI_Error_class(code, &error_class);
  const std::string full =
      absl::StrFormat("%s: MPI error %d: %s", what, code, message);
  switch (error_class) {
    case MPI_ERR_ARG:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_OP:
    case MPI_ERR_ROOT:
    case MPI_ERR_BUFFER:
      return absl::InvalidArgumentError(full);
    default:
      // A peer that is gone, a transport that failed: the collective did
      // not complete.
      return absl::UnavailableError(full);
  }
}

// --- 16-bit floats --------------------------------------------------------
// MPI has no f16 or bf16 type: they travel as MPI_UINT16_T and these
// commutative user ops combine them with reduce_math.h, in float per pair of
// operands rounding back once, as Gloo does.

template <DType kDType, bool kMax>
void Combine16(void* in, void* inout, int* length, MPI_Datatype*) {
  CombineElements(inout, in, inout, *length, kDType, kMax);
}

absl::Status CreateUserOps(MpiProcess& process) {
  struct {
    MPI_User_function* function;
    MPI_Op* op;
  } const ops[] = {
      {&Combine16<DType::kF16, false>, &process.half_sum},
      {&Combine16<DType::kF16, true>, &process.half_max},
      {&Combine16<DType::kBF16, false>, &process.bfloat16_sum},
      {&Combine16<DType::kBF16, true>, &process.bfloat16_max},
  };
  for (const auto& entry : ops) {
    if (int rc = MPI_Op_create(entry.function, /*commute=*/1, entry.op);
        rc != MPI_SUCCESS) {
      return MpiError(rc, "MPI_Op_create");
    }
  }
  return absl::OkStatus();
}

// --- Process lifetime -----------------------------------------------------

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (Process().collective_failed.load()) {
    // MPI_Abort ends this process too, before exit() flushes stdio.
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, kAbortErrorCode);
    return;
  }
  MPI_Finalize();
}

// Open MPI settings Kindling starts MPI with unless the job set them (an
// OMPI_MCA_* variable, which mpirun's --mca also sets in every rank). Both
// were measured with benches/allreduce_bench on 2 ranks of one machine
// (docs/distributed.md, "Open MPI's settings"):
// - libnbc's MPI_Iallreduce picks a binomial tree (reduce to rank 0, then
//   broadcast: the whole buffer twice in a row) for every in-place call on
//   fewer than 4 ranks. Algorithm 3, reduce-scatter then all-gather
//   (Rabenseifner; ring where it does not apply), moves 1/n of the buffer
//   per step and took about half the time from 256 KiB to 64 MiB.
// - The shared-memory transport's single copy through process_vm_readv
//   (CMA) was slower than copying through its shared segment from 16 KiB to
//   25 MiB (Kindling's default gradient bucket): 0.50x the time at 1.25 MiB,
//   0.85x at 25 MiB, 1.2x at 64 MiB.
constexpr std::pair<const char*, const char*> kOpenMpiSettings[] = {
    {"OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3"},
    {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"},
};

void PreferMeasuredOpenMpiSettings() {
  for (const auto& [name, value] : kOpenMpiSettings) {
    setenv(name, value, /*overwrite=*/0);  // the job's own choice wins
  }
}

absl::Status InitializeMpi(MpiProcess& process) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return absl::FailedPreconditionError(
        "ConnectMpi: MPI was already finalized in this process");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    // The program initialized MPI itself and owns MPI_Finalize.
    MPI_Query_thread(&process.thread_level);
  } else {
    PreferMeasuredOpenMpiSettings();
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE,
                                 &process.thread_level);
        rc != MPI_SUCCESS) {
      return MpiError(rc, "MPI_Init_thread");
    }
    std::atexit(&FinalizeAtExit);
  }
  if (process.thread_level < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ConnectMpi: MPI gave %s; Kindling needs MPI_THREAD_SERIALIZED or "
        "MPI_THREAD_MULTIPLE (its collectives may run on any thread)",
        ThreadLevelName(process.thread_level)));
  }
  process.serialize_calls = process.thread_level < MPI_THREAD_MULTIPLE;
  return CreateUserOps(process);
}

absl::Status InitializeMpiOnce() {
  MpiProcess& process = Process();
  absl::MutexLock lock(&process.init_mu);
  if (!process.init_attempted) {
    process.init_attempted = true;
    process.init_status = InitializeMpi(process);
  }
  return process.init_status;
}

// --- Waiting with a deadline ------------------------------------------------

// Call: one collective call, as the waits for its MPI operations see it.
struct Call {
  absl::Time deadline;  // the call's start + the communicator's timeout
  absl::Duration timeout;
  // The call's description for an error message; formatted only then, so
  // that a successful small collective spends no time on it. Refers to the
  // caller's named lambda.
  absl::FunctionRef<std::string()> describe;
};

// WaitFor() polls `request`, which moves about `bytes` bytes, until it
// completes (OK), MPI reports an error, or the call's deadline passes
// (DeadlineExceeded).
absl::Status WaitFor(MPI_Request* request, const Call& call, int64_t bytes) {
  absl::Time before = absl::Now();
  absl::Time spin_until = before + kSpinFor + bytes * kSpinPerByte;
  absl::Duration nap = kFirstNap;
  for (;;) {
    int done = 0;
    int rc;
    {
      MpiCallLock lock;
      rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS) return MpiError(rc, call.describe());
    if (done) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (now >= call.deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s: some peer did not take part within the timeout of %s",
          call.describe(), absl::FormatDuration(call.timeout)));
    }
    if (now - before > kWorkingTest) {  // data moved: keep up with it
      spin_until = std::max(spin_until, now + kSpinFor);
      nap = kFirstNap;
    }
    before = now;
    if (now < spin_until) continue;
    if (now - spin_until < kYieldFor) {
      sched_yield();
      continue;
    }
    absl::SleepFor(std::min(nap, call.deadline - now));
    nap = std::min(2 * nap, kLongestNap);
    before = absl::Now();
  }
}

// --- The communicator -------------------------------------------------------

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int world_size,
                  absl::Duration timeout, int max_count)
      : Communicator(rank, world_size, timeout),
        comm_(comm),
        max_count_(max_count) {}

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A broken communicator may have a collective that never ends: leave it.
    if (finalized || broken()) return;
    MpiCallLock lock;
    MPI_Comm_free(&comm_);
  }

  std::string backend() const override { return "mpi"; }
  Device device() const override { return Device::Cpu(); }
  // A call costs 1-3 us on one machine (allreduce_bench: 1 KiB in 1.3 us,
  // 16 KiB in 3 us), about what copying 64 KiB into a bucket and back out
  // costs. Reducing the quickstart's three large gradients in place made
  // its two-rank epoch 0.93-0.96x as long (four alternating runs).
  int64_t PackBelowBytes() const override { return int64_t{64} << 10; }

  absl::Status AllReduce(void* data, int64_t count, DType dtype,
                         ReduceOp op) override;
  absl::Status Broadcast(void* data, int64_t bytes, int root) override;
  absl::Status AllGather(const void* in, void* out, int64_t bytes) override;
  absl::Status Barrier() override;

 private:
  // Checked first by every collective: FailedPrecondition once broken.
  absl::Status CheckUsable(const char* operation) const;
  bool broken() const;
  // StartCall() is a collective called now. `describe` must outlive it (a
  // named lambda of the caller's, not a temporary).
  Call StartCall(absl::FunctionRef<std::string()> describe) const {
    return Call{absl::Now() + timeout(), timeout(), describe};
  }
  // Finish() waits for a started MPI operation of `bytes` bytes (or takes
  // the error that starting it gave) and breaks the communicator if it
  // failed.
  absl::Status Finish(int start_rc, MPI_Request* request, const Call& call,
                      int64_t bytes);
  absl::Status ReduceChunk(char* data, int count, DType dtype, ReduceOp op,
                           const Call& call);
  absl::Status GatherChunk(const char* in, char* out, int64_t bytes,
                           int64_t offset, int length, const Call& call);

  MPI_Comm comm_;
  const int max_count_;
  mutable absl::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

absl::Status MpiCommunicator::CheckUsable(const char* operation) const {
  absl::MutexLock lock(&mu_);
  if (failure_.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s: the mpi communicator is broken by an earlier failure (%s)",
      operation, failure_.ToString()));
}

bool MpiCommunicator::broken() const {
  absl::MutexLock lock(&mu_);
  return !failure_.ok();
}

absl::Status MpiCommunicator::Finish(int start_rc, MPI_Request* request,
                                     const Call& call, int64_t bytes) {
  absl::Status status = start_rc == MPI_SUCCESS
                            ? WaitFor(request, call, bytes)
                            : MpiError(start_rc, call.describe());
  if (!status.ok()) {
    Process().collective_failed.store(true);
    absl::MutexLock lock(&mu_);
    failure_ = status;
  }
  return status;
}

// MpiTypeOf() / MpiOpOf(): how `dtype` travels and combines. kAverage sums;
// DivideInPlace() (reduce_math.h, as Gloo) follows locally.
MPI_Datatype MpiTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return MPI_FLOAT;
    case DType::kF64:
      return MPI_DOUBLE;
    case DType::kI64:
      return MPI_INT64_T;
    default:  // f16, bf16: bits, combined by the user ops
      return MPI_UINT16_T;
  }
}

MPI_Op MpiOpOf(DType dtype, ReduceOp op) {
  const bool max = op == ReduceOp::kMax;
  const MpiProcess& process = Process();
  switch (dtype) {
    case DType::kF16:
      return max ? process.half_max : process.half_sum;
    case DType::kBF16:
      return max ? process.bfloat16_max : process.bfloat16_sum;
    default:
      return max ? MPI_MAX : MPI_SUM;
  }
}

absl::Status MpiCommunicator::ReduceChunk(char* data, int count, DType dtype,
                                          ReduceOp op, const Call& call) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    MpiCallLock lock;
    rc = MPI_Iallreduce(MPI_IN_PLACE, data, count, MpiTypeOf(dtype),
                        MpiOpOf(dtype, op), comm_, &request);
  }
  KINDLING_RETURN_IF_ERROR(
      Finish(rc, &request, call, int64_t{count} * DTypeSize(dtype)));
  if (op == ReduceOp::kAverage) {
    DivideInPlace(data, count, dtype, world_size());
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::AllReduce(void* data, int64_t count, DType dtype,
                                        ReduceOp op) {
  const auto describe = [&] {
    return absl::StrFormat("AllReduce (%s) of %d %s elements", ReduceOpName(op),
                           count, std::string(DTypeName(dtype)));
  };
  const Call call = StartCall(describe);
  KINDLING_RETURN_IF_ERROR(CheckUsable("AllReduce"));
  if (!IsReducibleDType(dtype)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AllReduce: dtype %s cannot be reduced (f32, f64, f16, bf16, i64 can)",
        std::string(DTypeName(dtype))));
  }
  if (count < 0 || (count > 0 && data == nullptr)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AllReduce: %d elements at %p is not a buffer", count, data));
  }
  // MPI counts are int: larger buffers go in pieces of max_count_ elements.
  // All ranks see the same count, so a count of 0 skips MPI on all of them.
  char* bytes = static_cast<char*>(data);
  const size_t element_size = DTypeSize(dtype);
  for (int64_t done = 0; done < count;) {
    const int chunk =
        static_cast<int>(std::min<int64_t>(count - done, max_count_));
    KINDLING_RETURN_IF_ERROR(
        ReduceChunk(bytes + done * element_size, chunk, dtype, op, call));
    done += chunk;
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Broadcast(void* data, int64_t bytes, int root) {
  const auto describe = [&] {
    return absl::StrFormat("Broadcast of %d bytes from rank %d", bytes, root);
  };
  const Call call = StartCall(describe);
  KINDLING_RETURN_IF_ERROR(CheckUsable("Broadcast"));
  KINDLING_RETURN_IF_ERROR(CheckRoot(root, "Broadcast"));
  if (bytes < 0 || (bytes > 0 && data == nullptr)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Broadcast: %d bytes at %p is not a buffer", bytes, data));
  }
  char* base = static_cast<char*>(data);
  for (int64_t done = 0; done < bytes;) {
    const int chunk =
        static_cast<int>(std::min<int64_t>(bytes - done, max_count_));
    MPI_Request request = MPI_REQUEST_NULL;
    int rc;
    {
      MpiCallLock lock;
      rc = MPI_Ibcast(base + done, chunk, MPI_BYTE, root, comm_, &request);
    }
    KINDLING_RETURN_IF_ERROR(Finish(rc, &request, call, chunk));
    done += chunk;
  }
  return absl::OkStatus();
}

// GatherChunk() gathers bytes [offset, offset + length) of every rank's
// `bytes`: rank r's piece lands at out + r * bytes + offset, which a receive
// type of `length` bytes with an extent of `bytes` describes.
absl::Status MpiCommunicator::GatherChunk(const char* in, char* out,
                                          int64_t bytes, int64_t offset,
                                          int length, const Call& call) {
  MPI_Datatype piece = MPI_DATATYPE_NULL;
  MPI_Datatype strided = MPI_DATATYPE_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    MpiCallLock lock;
    rc = MPI_Type_contiguous(length, MPI_BYTE, &piece);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Type_create_resized(piece, 0, bytes, &strided);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&strided);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Iallgather(in + offset, length, MPI_BYTE, out + offset, 1,
                          strided, comm_, &request);
    }
    // Freeing a type in use by a started operation is allowed: MPI frees
    // it when the operation ends.
    if (piece != MPI_DATATYPE_NULL) MPI_Type_free(&piece);
    if (strided != MPI_DATATYPE_NULL) MPI_Type_free(&strided);
  }
  return Finish(rc, &request, call, int64_t{length} * world_size());
}

absl::Status MpiCommunicator::AllGather(const void* in, void* out,
                                        int64_t bytes) {
  const auto describe = [&] {
    return absl::StrFormat("AllGather of %d bytes per rank", bytes);
  };
  const Call call = StartCall(describe);
  KINDLING_RETURN_IF_ERROR(CheckUsable("AllGather"));
  if (bytes < 0 || (bytes > 0 && (in == nullptr || out == nullptr))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "AllGather: %d bytes from %p into %p is not a pair of buffers", bytes,
        in, out));
  }
  if (bytes == 0) return absl::OkStatus();  // on every rank alike
  const char* source = static_cast<const char*>(in);
  char* target = static_cast<char*>(out);
  if (bytes <= max_count_) {
    // The common case; MPI_IN_PLACE when `in` already is this rank's slot
    // (MPI forbids overlapping send and receive buffers).
    const bool in_place = source == target + rank() * bytes;
    MPI_Request request = MPI_REQUEST_NULL;
    int rc;
    {
      MpiCallLock lock;
      rc = MPI_Iallgather(in_place ? MPI_IN_PLACE : source,
                          static_cast<int>(bytes), MPI_BYTE, target,
                          static_cast<int>(bytes), MPI_BYTE, comm_, &request);
    }
    return Finish(rc, &request, call, bytes * world_size());
  }
  for (int64_t done = 0; done < bytes;) {
    const int chunk =
        static_cast<int>(std::min<int64_t>(bytes - done, max_count_));
    KINDLING_RETURN_IF_ERROR(
        GatherChunk(source, target, bytes, done, chunk, call));
    done += chunk;
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Barrier() {
  const auto describe = [] { return std::string("Barrier"); };
  const Call call = StartCall(describe);
  KINDLING_RETURN_IF_ERROR(CheckUsable("Barrier"));
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    MpiCallLock lock;
    rc = MPI_Ibarrier(comm_, &request);
  }
  return Finish(rc, &request, call, 0);
}

bool EnvironmentHas(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

}  // namespace

bool StartedByMpirun() {
  return (EnvironmentHas("OMPI_COMM_WORLD_SIZE") &&
          EnvironmentHas("OMPI_COMM_WORLD_RANK")) ||
         EnvironmentHas("PMI_RANK") || EnvironmentHas("PMIX_RANK");
}

std::string MpiThreadLevel() {
  MpiProcess& process = Process();
  absl::MutexLock lock(&process.init_mu);
  if (!process.init_attempted || process.thread_level < 0) return "";
  return ThreadLevelName(process.thread_level);
}

namespace internal {

absl::StatusOr<std::unique_ptr<Communicator>> ConnectMpiWithMaxCount(
    absl::Duration timeout, int max_count) {
  if (timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ConnectMpi: the timeout %s is not positive",
                        absl::FormatDuration(timeout)));
  }
  if (max_count <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ConnectMpi: the largest count per MPI call %d is not positive",
        max_count));
  }
  const auto describe = [] {
    return std::string("ConnectMpi (duplicating MPI_COMM_WORLD)");
  };
  const Call call{absl::Now() + timeout, timeout, describe};
  KINDLING_RETURN_IF_ERROR(InitializeMpiOnce());
  // MPI_Comm_idup rather than MPI_Comm_dup: the duplication is collective,
  // and a rank that never joins must not hang the others.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    MpiCallLock lock;
    rc = MPI_Comm_idup(MPI_COMM_WORLD, &comm, &request);
  }
  absl::Status status = rc == MPI_SUCCESS
                            ? WaitFor(&request, call, 0)
                            : MpiError(rc, "ConnectMpi: MPI_Comm_idup");
  if (!status.ok()) {
    Process().collective_failed.store(true);
    return status;
  }
  int rank = 0;
  int world_size = 0;
  {
    MpiCallLock lock;
    // Errors become return codes on this communicator, so that a lost peer
    // is a Status rather than the default MPI_ERRORS_ARE_FATAL abort.
    rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(comm, &rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(comm, &world_size);
  }
  if (rc != MPI_SUCCESS) return MpiError(rc, "ConnectMpi");
  return std::unique_ptr<Communicator>(
      new MpiCommunicator(comm, rank, world_size, timeout, max_count));
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<Communicator>> ConnectMpi(
    absl::Duration timeout) {
  return internal::ConnectMpiWithMaxCount(timeout, INT_MAX);
}

}  // namespace kindling::distributed
