#include "examples/data_parallel.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "examples/train_flags.h"
#include "kindling/distributed/connect.h"
#include "kindling/distributed/local_launcher.h"

namespace examples {

namespace dist = kindling::distributed;

std::optional<int> LaunchRanksIfAsked(int argc, char** argv) {
  const int nproc = absl::GetFlag(FLAGS_nproc);
  if (nproc <= 1) return std::nullopt;
  absl::StatusOr<dist::LaunchEnvironment> launch =
      dist::ReadLaunchEnvironment();
  if (launch.ok() &&
      launch->launcher != dist::LaunchEnvironment::Launcher::kSingle) {
    return std::nullopt;  // already a rank
  }
  // /proc/self/exe rather than argv[0]: the ranks run this very binary
  // whatever the working directory or PATH.
  std::vector<std::string> args = {"/proc/self/exe"};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  absl::StatusOr<int> code = dist::LaunchLocal(
      {.nproc = nproc,
       .environment = {},
       .report =
           [](const std::string& line) {
             std::fprintf(stderr, "launch: %s\n", line.c_str());
           }},
      args);
  if (!code.ok()) {
    std::fprintf(stderr, "--nproc=%d: %s\n", nproc,
                 code.status().ToString().c_str());
    return 1;
  }
  return *code;
}

absl::StatusOr<Job> JoinJob() {
  absl::StatusOr<dist::LaunchEnvironment> launch =
      dist::ReadLaunchEnvironment();
  if (!launch.ok()) return launch.status();
  absl::StatusOr<dist::Backend> backend =
      dist::ParseBackend(absl::GetFlag(FLAGS_backend));
  if (!backend.ok()) return backend.status();
  absl::StatusOr<std::unique_ptr<dist::Communicator>> comm = dist::Connect(
      *launch, {.backend = *backend,
                .timeout = absl::Seconds(absl::GetFlag(FLAGS_dist_timeout_s))});
  if (!comm.ok()) return comm.status();
  if ((*comm)->rank() != 0) {
    if (std::freopen("/dev/null", "w", stdout) == nullptr) {
      std::fprintf(stderr, "rank %d: cannot silence stdout\n", (*comm)->rank());
    }
  }
  return Job{.launch = *std::move(launch), .communicator = *std::move(comm)};
}

int ThreadsPerRank(const Job& job) {
  return std::max(1, absl::GetFlag(FLAGS_threads) /
                         std::max(1, job.launch.local_world_size));
}

}  // namespace examples
