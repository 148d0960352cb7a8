#include "examples/data_parallel.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

namespace {

// ExecMpirun() replaces this process with `mpirun -np nproc` running this
// binary with the same arguments on this machine: Open MPI's launcher
// starts the ranks (which then pick MPI) and ends the job when a rank fails;
// signals are mpirun's to handle (docs/distributed.md). Returns only if
// mpirun cannot be run.
int ExecMpirun(int nproc, int argc, char** argv) {
  // The ranks run this very binary: its path, as mpirun's daemon would
  // resolve /proc/self/exe to itself.
  std::error_code error;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::fprintf(stderr,
                 "--nproc=%d --backend=mpi: cannot read /proc/self/exe: %s\n",
                 nproc, error.message().c_str());
    return 1;
  }
  // One machine: no ssh (plm isolated), ranks free to use every core the
  // job may (no binding; as many ranks as asked, whatever the core count).
  // As root (a container), Open MPI wants --allow-run-as-root.
  std::vector<std::string> args = {"mpirun",         "--mca",     "plm",
                                   "isolated",       "--bind-to", "none",
                                   "--oversubscribe"};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  args.insert(args.end(), {"-np", std::to_string(nproc), self.string()});
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> exec_args;
  for (std::string& arg : args) exec_args.push_back(arg.data());
  exec_args.push_back(nullptr);
  std::fflush(nullptr);
  execvp("mpirun", exec_args.data());
  std::fprintf(stderr,
               "--nproc=%d --backend=mpi: cannot run mpirun (%s); install "
               "Open MPI's launcher (Debian: openmpi-bin) or use "
               "--backend=gloo\n",
               nproc, std::strerror(errno));
  return 1;
}

}  // namespace

std::optional<int> LaunchRanksIfAsked(int argc, char** argv) {
  const int nproc = absl::GetFlag(FLAGS_nproc);
  if (nproc <= 1) return std::nullopt;
  absl::StatusOr<dist::LaunchEnvironment> launch =
      dist::ReadLaunchEnvironment();
  if (launch.ok() &&
      launch->launcher != dist::LaunchEnvironment::Launcher::kSingle) {
    return std::nullopt;  // already a rank
  }
  if (absl::GetFlag(FLAGS_backend) == "mpi") {
    return ExecMpirun(nproc, argc, argv);
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
