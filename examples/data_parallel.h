// The examples' data-parallel start: `--nproc=N` runs N ranks of the same
// program on this machine (as kindling-launch does), and a program started
// as a rank (by kindling-launch, torchrun-style variables or mpirun) joins
// its job.
//
//   int main(int argc, char** argv) {
//     absl::ParseCommandLine(argc, argv);
//     if (std::optional<int> code = examples::LaunchRanksIfAsked(argc, argv))
//       return *code;                       // this process was the launcher
//     absl::StatusOr<examples::Job> job = examples::JoinJob();
//     ...
//   }
#ifndef KINDLING_EXAMPLES_DATA_PARALLEL_H_
#define KINDLING_EXAMPLES_DATA_PARALLEL_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/launch_environment.h"

namespace examples {

// LaunchRanksIfAsked(): with --nproc > 1 in a process that is not a rank
// yet, runs --nproc copies of this program with the same arguments and
// returns the job's exit status (the first failing rank's); otherwise
// nullopt: this process trains. With --backend=mpi it runs `mpirun -np N`
// of itself instead (Open MPI's shared memory between the ranks: faster
// than Gloo on one machine) and relays signals to the ranks.
std::optional<int> LaunchRanksIfAsked(int argc, char** argv);

// Job: this process's place in its data-parallel job.
struct Job {
  kindling::distributed::LaunchEnvironment launch;
  // communicator: a world of one when the process runs alone.
  std::unique_ptr<kindling::distributed::Communicator> communicator;

  int rank() const { return communicator->rank(); }
  int world_size() const { return communicator->world_size(); }
  // For TrainerOptions::communicator: null alone.
  kindling::distributed::Communicator* trainer_communicator() const {
    return world_size() > 1 ? communicator.get() : nullptr;
  }
};

// JoinJob() reads the launch variables, connects (--backend, --dist_timeout_s)
// and, on ranks other than 0, sends stdout to /dev/null so the job prints
// one copy of its progress (errors still reach stderr). Bad launch
// variables or a failed rendezvous: the error, before any training.
absl::StatusOr<Job> JoinJob();

// ThreadsPerRank() is --threads shared by the ranks on this machine (at
// least 1 each).
int ThreadsPerRank(const Job& job);

}  // namespace examples

#endif  // KINDLING_EXAMPLES_DATA_PARALLEL_H_
