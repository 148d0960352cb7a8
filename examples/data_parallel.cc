#include "examples/data_parallel.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "examples/train_flags.h"
#include "kindling/distributed/connect.h"
#include "kindling/distributed/local_launcher.h"

namespace examples {

namespace dist = kindling::distributed;

namespace {

// MpirunArgs() is `mpirun -np nproc` of this binary (`self`) with this
// process's arguments, on this machine: no ssh (plm isolated), ranks free to
// use every core the job may (no binding; as many ranks as asked, whatever
// the core count), and --allow-run-as-root as root (a container), which
// Open MPI otherwise refuses.
std::vector<std::string> MpirunArgs(int nproc, const std::string& self,
                                    int argc, char** argv) {
  std::vector<std::string> args = {"mpirun",         "--mca",     "plm",
                                   "isolated",       "--bind-to", "none",
                                   "--oversubscribe"};
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  args.insert(args.end(), {"-np", std::to_string(nproc), self});
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return args;
}

// ChildrenOf() are the processes whose parent is `parent` (mpirun's ranks).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::SimpleAtoi(name, &pid)) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == parent) children.push_back(pid);
  }
  return children;
}

// SuperviseMpirun() is RunMpirun() with the relayed signals blocked.
int SuperviseMpirun(int nproc, const std::vector<char*>& exec_args,
                    const sigset_t& relayed, const sigset_t& previous) {
  // An exec failure's errno comes back through a pipe that a successful
  // exec closes (between fork and exec, only async-signal-safe calls).
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "--nproc=%d --backend=mpi: cannot create a pipe: %s\n",
                 nproc, std::strerror(errno));
    return 1;
  }
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t mpirun = fork();
  const int fork_errno = errno;
  if (mpirun == 0) {
    setpgid(0, 0);  // the terminal's Ctrl-C reaches this process only
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    execvp("mpirun", exec_args.data());
    const int err = errno;
    if (write(exec_error[1], &err, sizeof(err)) < 0) {
    }
    _exit(127);
  }
  close(exec_error[1]);
  int err = 0;
  const bool exec_failed =
      mpirun > 0 && read(exec_error[0], &err, sizeof(err)) == sizeof(err);
  close(exec_error[0]);
  if (mpirun < 0 || exec_failed) {
    std::fprintf(stderr,
                 "--nproc=%d --backend=mpi: cannot run mpirun (%s); install "
                 "Open MPI's launcher (Debian: openmpi-bin) or use "
                 "--backend=gloo\n",
                 nproc, std::strerror(mpirun < 0 ? fork_errno : err));
    if (exec_failed) waitpid(mpirun, nullptr, 0);
    return 1;
  }
  int stopped_by = 0;  // a relayed SIGINT, SIGTERM or SIGHUP
  for (;;) {
    const int sig = sigwaitinfo(&relayed, nullptr);
    if (sig == SIGCHLD || sig < 0) {
      int status = 0;
      if (waitpid(mpirun, &status, WNOHANG) != mpirun) continue;
      const int code =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      // As LaunchLocal: an interrupted job must not look like a finished
      // one.
      return code == 0 && stopped_by != 0 ? 128 + stopped_by : code;
    }
    if (sig != SIGUSR1) stopped_by = sig;
    const std::vector<pid_t> ranks = ChildrenOf(mpirun);
    if (ranks.empty()) {
      kill(mpirun, sig);
    } else {
      for (pid_t rank : ranks) kill(rank, sig);
    }
  }
}

// RunMpirun() runs mpirun (args) in a process group of its own and returns
// its exit status (128 + signal if a signal ended it). SIGINT, SIGTERM,
// SIGUSR1 and SIGHUP sent to this process go to the ranks themselves, as a
// scheduler that signals every process of a job does: sent to mpirun,
// SIGTERM and SIGINT would make it end the job with status 1 instead of
// letting the ranks checkpoint and exit 75. Before any rank runs they go
// to mpirun. A job that a relayed SIGINT, SIGTERM or SIGHUP stopped and
// whose ranks all exited 0 returns 128 + that signal.
int RunMpirun(int nproc, std::vector<std::string> args) {
  std::vector<char*> exec_args;
  for (std::string& arg : args) exec_args.push_back(arg.data());
  exec_args.push_back(nullptr);
  sigset_t relayed, previous;
  sigemptyset(&relayed);
  for (int sig : {SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGCHLD}) {
    sigaddset(&relayed, sig);
  }
  sigprocmask(SIG_BLOCK, &relayed, &previous);
  const int status = SuperviseMpirun(nproc, exec_args, relayed, previous);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  return status;
}

// LaunchMpirun() runs this binary's ranks through mpirun (RunMpirun()).
int LaunchMpirun(int nproc, int argc, char** argv) {
  // The ranks run this very binary: its path, as mpirun would resolve
  // /proc/self/exe to itself.
  std::error_code error;
  const std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::fprintf(stderr,
                 "--nproc=%d --backend=mpi: cannot read /proc/self/exe: %s\n",
                 nproc, error.message().c_str());
    return 1;
  }
  return RunMpirun(nproc, MpirunArgs(nproc, self.string(), argc, argv));
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
    return LaunchMpirun(nproc, argc, argv);
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
