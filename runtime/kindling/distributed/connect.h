// Connect(): the communicator of this process's launch, on the engine the
// launch implies.
//
//   absl::StatusOr<LaunchEnvironment> launch = ReadLaunchEnvironment();
//   if (!launch.ok()) return launch.status();   // bad variables: before
//                                               // anything connects
//   absl::StatusOr<std::unique_ptr<Communicator>> comm =
//       Connect(*launch, {.backend = Backend::kAuto});
//
// kAuto picks MPI when mpirun started the process, Gloo under RANK /
// WORLD_SIZE / MASTER_ADDR / MASTER_PORT (kindling-launch, torchrun,
// Slurm and Kubernetes jobs), and a world of one otherwise. Any engine can
// be asked for: Gloo under mpirun still needs MASTER_ADDR and MASTER_PORT;
// MPI needs mpirun; NCCL (GPU memory, on cuda:LOCAL_RANK) needs a
// --config=cuda build and MASTER_ADDR / MASTER_PORT for its id. Which is faster
// where: docs/distributed.md (MPI's shared memory beats Gloo's loopback TCP on
// one machine).
#ifndef KINDLING_DISTRIBUTED_CONNECT_H_
#define KINDLING_DISTRIBUTED_CONNECT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {

enum class Backend { kAuto, kGloo, kMpi, kNccl };

// ParseBackend() reads "auto", "gloo", "mpi" or "nccl"; InvalidArgument
// otherwise.
[[nodiscard]] absl::StatusOr<Backend> ParseBackend(const std::string& text);

struct ConnectOptions {
  Backend backend = Backend::kAuto;
  // timeout bounds each collective and the rendezvous.
  absl::Duration timeout = absl::Minutes(5);
  // token authenticates connections to the rendezvous store (Gloo);
  // default: KINDLING_DIST_TOKEN.
  std::string token = TokenFromEnvironment();
};

[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> Connect(
    const LaunchEnvironment& launch, const ConnectOptions& options);

// SoloCommunicator() is a world of one: every collective leaves the data
// as it is (an average of one value is that value).
std::unique_ptr<Communicator> SoloCommunicator();

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_CONNECT_H_
