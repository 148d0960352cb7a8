// The launch environment: which rank this process is, how many there are and
// where rank 0's rendezvous store listens, read from the variables that
// torchrun, kindling-launch, Slurm scripts and Kubernetes operators set
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
// or from Open MPI's mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE).
//
//   absl::StatusOr<LaunchEnvironment> env = ReadLaunchEnvironment();
//   if (!env.ok()) return env.status();  // a misconfigured launch
//   LOG(INFO) << env->ToString();
//
// Every mistake is found here, before anything connects: a rank that waits
// for a rendezvous that can never happen is much harder to diagnose than an
// error naming the variable.
#ifndef KINDLING_DISTRIBUTED_LAUNCH_ENVIRONMENT_H_
#define KINDLING_DISTRIBUTED_LAUNCH_ENVIRONMENT_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace kindling::distributed {

struct LaunchEnvironment {
  enum class Launcher {
    // No launch variable is set: one process, rank 0 of 1.
    kSingle,
    // RANK / WORLD_SIZE / MASTER_* (torchrun, kindling-launch, Slurm, ...).
    kEnvironment,
    // Open MPI's mpirun (OMPI_COMM_WORLD_*).
    kMpirun,
  };

  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  // master_addr:master_port is rank 0's rendezvous store. Under mpirun they
  // are optional: empty and 0 when not set (MPI has its own rendezvous).
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // store_path (KINDLING_STORE_PATH): a directory on a file system every
  // rank shares, through which Gloo ranks meet instead of rank 0's TCP
  // store; MASTER_ADDR and MASTER_PORT are then optional. Use a fresh
  // directory per job.
  std::string store_path;
  Launcher launcher = Launcher::kSingle;

  // ToString() is one line for logs: "rank 1 of 2 (local 1), rendezvous
  // 127.0.0.1:29500, launched by environment".
  std::string ToString() const;
};

// A variable lookup: the value, or nullopt when the variable is not set.
using EnvironmentLookup =
    std::function<std::optional<std::string>(const std::string&)>;

// ReadLaunchEnvironment() reads the process environment. An empty value
// counts as not set (`export RANK=` is how a shell clears a variable).
// Errors are InvalidArgument, naming the variable and what it must be.
[[nodiscard]] absl::StatusOr<LaunchEnvironment> ReadLaunchEnvironment();

// The same rules over `lookup`, so that tests need not touch the real
// environment.
[[nodiscard]] absl::StatusOr<LaunchEnvironment> ReadLaunchEnvironment(
    const EnvironmentLookup& lookup);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_LAUNCH_ENVIRONMENT_H_
