// The MPI Communicator: Open MPI's collectives (shared memory between the
// processes of one machine, the network between machines) for host memory.
//
//   // mpirun --np 4 ./train
//   if (kindling::distributed::StartedByMpirun()) {
//     KINDLING_ASSIGN_OR_RETURN(
//         std::unique_ptr<Communicator> comm,
//         kindling::distributed::ConnectMpi(absl::Seconds(60)));
//   }
//
// Timeouts. MPI collectives have none, so each one is started non-blocking
// (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ibarrier) and polled with
// MPI_Test until it completes or timeout() has passed since the call; then it
// returns DeadlineExceeded naming the operation, and the communicator is
// broken. The poll spins while data could be moving (Open MPI progresses a
// collective only inside MPI calls) and then sleeps 50-200 us between tests,
// so a rank that waits for a late peer leaves its core to the compute
// threads. On 2 ranks (shared memory) a 2-element f64 AllReduce takes
// ~0.8 us and 325k f32 (1.25 MiB) ~77 us (benches/allreduce_bench.cc).
//
// Open MPI's settings. Before it initializes MPI, ConnectMpi() sets two of
// Open MPI's parameters that the job has not set (OMPI_MCA_* variables,
// which mpirun's --mca also sets): the in-place non-blocking all-reduce's
// algorithm to reduce-scatter + all-gather, and the shared-memory transport
// to copy through its segment rather than process_vm_readv. Both measured
// faster for gradient-sized buffers (docs/distributed.md, "Open MPI's
// settings"); a job's own value wins.
//
// Process lifetime. MPI is initialized once per process, by the first
// ConnectMpi() (unless the program initialized it itself, which then also owns
// MPI_Finalize), and finalized at process exit (atexit). If a collective
// failed, the exit calls MPI_Abort instead of MPI_Finalize: MPI_Finalize
// synchronizes with every rank, so a rank that gave up on a lost or silent
// peer would hang there, while MPI_Abort makes mpirun end all ranks of the
// job (the exit status of the job is then non-zero). A collective that timed
// out cannot be cancelled (MPI has no cancel for collectives): MPI may still
// write its buffer if the peer joins late, so keep the buffer alive or end
// the process after such an error.
//
// Threads. MPI is asked for MPI_THREAD_MULTIPLE; MPI_THREAD_SERIALIZED is
// enough (one thread at a time calls a communicator's collectives), and with
// it Kindling serializes its own MPI calls. A lower level is an error.
#ifndef KINDLING_DISTRIBUTED_MPI_COMMUNICATOR_H_
#define KINDLING_DISTRIBUTED_MPI_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"

namespace kindling::distributed {

// StartedByMpirun() is true when the process was launched by mpirun (Open
// MPI's OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK, or a PMI/PMIx rank).
bool StartedByMpirun();

// ConnectMpi() initializes MPI if needed and returns a communicator over all
// the processes of the job (a duplicate of MPI_COMM_WORLD, so its traffic
// never mixes with other communicators'). It is collective: every rank calls
// it, and a rank that does not within `timeout` makes it DeadlineExceeded.
// Outside mpirun it is a world of one process.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectMpi(
    absl::Duration timeout);

// MpiThreadLevel() names the thread support MPI gave ("MPI_THREAD_MULTIPLE",
// ...); empty before MPI is initialized.
std::string MpiThreadLevel();

namespace internal {

// ConnectMpiWithMaxCount() is ConnectMpi() with each MPI call limited to
// `max_count` elements (bytes for Broadcast and AllGather) instead of
// INT_MAX, so tests reach the splitting of large buffers with small ones.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectMpiWithMaxCount(
    absl::Duration timeout, int max_count);

}  // namespace internal
}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_MPI_COMMUNICATOR_H_
