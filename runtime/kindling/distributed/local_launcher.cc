#include "kindling/distributed/local_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

extern char** environ;

namespace kindling::distributed {
namespace {

// The signals the launcher passes on to every rank. SIGUSR1 is passed on
// and otherwise ignored (jobs use it for "checkpoint now"); the others stop
// the job.
constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP};

bool StopsJob(int sig) { return sig != SIGUSR1; }

const char* SignalName(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
  }
  return "a signal";
}

std::string ErrnoText(int err) { return std::strerror(err); }

// --- Signals ----------------------------------------------------------------
// The handler only counts the signal and writes a byte to a pipe (the
// self-pipe trick): both are async-signal-safe. The supervising loop polls
// the pipe, takes the counts and does the real work (kill, waitpid, logs).
static_assert(std::atomic<int>::is_always_lock_free,
              "signal handlers need lock-free atomics");
std::atomic<int> g_pending[NSIG];
std::atomic<int> g_wake_fd{-1};
std::atomic<bool> g_relay_installed{false};

extern "C" void OnSignal(int sig) {
  const int saved_errno = errno;
  g_pending[sig].fetch_add(1, std::memory_order_relaxed);
  const char byte = 0;
  // A full pipe already holds a wake-up, so a failed write loses nothing.
  if (write(g_wake_fd.load(std::memory_order_relaxed), &byte, 1) < 0) {
  }
  errno = saved_errno;
}

// SignalRelay owns the handlers of the forwarded signals and SIGCHLD while a
// job runs, and restores the previous ones when destroyed.
class SignalRelay {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SignalRelay>> Install();
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  // handled() lists the signals routed to OnSignal. A forwarded signal the
  // launcher inherited as ignored (nohup's SIGHUP, SIGINT of a shell's
  // background job) stays ignored, in the launcher and in the ranks.
  const std::vector<int>& handled() const { return handled_; }
  bool Forwards(int sig) const {
    return sig != SIGCHLD &&
           std::find(handled_.begin(), handled_.end(), sig) != handled_.end();
  }
  // Take() returns how many `sig` arrived since the last Take().
  int Take(int sig) { return g_pending[sig].exchange(0); }
  bool StopPending() const;
  // Wait() sleeps until a signal arrives or `timeout` passes.
  void Wait(absl::Duration timeout);

 private:
  SignalRelay(int read_fd, int write_fd)
      : read_fd_(read_fd), write_fd_(write_fd) {}
  void Route(int sig);

  int read_fd_;
  int write_fd_;
  std::vector<int> handled_;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

absl::StatusOr<std::unique_ptr<SignalRelay>> SignalRelay::Install() {
  if (g_relay_installed.exchange(true)) {
    return absl::FailedPreconditionError(
        "LaunchLocal is already running in this process");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int err = errno;
    g_relay_installed = false;
    return absl::InternalError("cannot create a pipe: " + ErrnoText(err));
  }
  std::unique_ptr<SignalRelay> relay(new SignalRelay(fds[0], fds[1]));
  for (std::atomic<int>& pending : g_pending) pending = 0;
  g_wake_fd = fds[1];
  for (int sig : kForwardedSignals) relay->Route(sig);
  relay->Route(SIGCHLD);
  return relay;
}

void SignalRelay::Route(int sig) {
  struct sigaction previous;
  sigaction(sig, nullptr, &previous);
  if (sig != SIGCHLD && previous.sa_handler == SIG_IGN) return;
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigfillset(&action.sa_mask);
  action.sa_flags = SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
  sigaction(sig, &action, nullptr);
  previous_.emplace_back(sig, previous);
  handled_.push_back(sig);
}

SignalRelay::~SignalRelay() {
  for (const auto& [sig, previous] : previous_) {
    sigaction(sig, &previous, nullptr);
  }
  g_wake_fd = -1;
  close(read_fd_);
  close(write_fd_);
  g_relay_installed = false;
}

bool SignalRelay::StopPending() const {
  for (int sig : kForwardedSignals) {
    if (StopsJob(sig) && g_pending[sig].load() > 0) return true;
  }
  return false;
}

void SignalRelay::Wait(absl::Duration timeout) {
  int timeout_ms = -1;
  if (timeout != absl::InfiniteDuration()) {
    const int64_t ms = absl::ToInt64Milliseconds(absl::Ceil(
        std::max(timeout, absl::ZeroDuration()), absl::Milliseconds(1)));
    timeout_ms = static_cast<int>(std::min<int64_t>(ms, INT_MAX));
  }
  struct pollfd poll_fd = {.fd = read_fd_, .events = POLLIN, .revents = 0};
  poll(&poll_fd, 1, timeout_ms);  // EINTR just means: look again.
  char buffer[64];
  while (read(read_fd_, buffer, sizeof(buffer)) > 0) {
  }
}

// --- Starting a rank
// ---------------------------------------------------------- ExecImage is what
// one rank's execvpe needs, built before fork() because the child of a possibly
// multithreaded process may only make async-signal-safe calls (no allocation)
// until it execs.
class ExecImage {
 public:
  ExecImage(const std::vector<std::string>& argv,
            std::vector<std::string> environment)
      : argv_strings_(argv), env_strings_(std::move(environment)) {
    for (std::string& arg : argv_strings_) argv_.push_back(arg.data());
    argv_.push_back(nullptr);
    for (std::string& entry : env_strings_) envp_.push_back(entry.data());
    envp_.push_back(nullptr);
  }
  ExecImage(const ExecImage&) = delete;
  ExecImage& operator=(const ExecImage&) = delete;

  const std::string& program() const { return argv_strings_[0]; }
  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::vector<std::string> argv_strings_;
  std::vector<std::string> env_strings_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

// The launch variables of one rank; they replace any inherited value. The
// OMPI_COMM_WORLD_* of a launcher itself started by mpirun are dropped:
// ReadLaunchEnvironment() prefers them, and they describe the launcher's
// job, not the ranks'.
std::vector<std::string> RankEnvironment(const LocalLaunchOptions& options,
                                         int rank, int port) {
  std::map<std::string, std::string> set;
  for (const auto& [name, value] : options.environment) set[name] = value;
  set["RANK"] = absl::StrFormat("%d", rank);
  set["WORLD_SIZE"] = absl::StrFormat("%d", options.nproc);
  set["LOCAL_RANK"] = absl::StrFormat("%d", rank);
  set["LOCAL_WORLD_SIZE"] = absl::StrFormat("%d", options.nproc);
  set["MASTER_ADDR"] = options.master_addr;
  set["MASTER_PORT"] = absl::StrFormat("%d", port);
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    if (set.count(name) > 0 || name.rfind("OMPI_COMM_WORLD_", 0) == 0) {
      continue;
    }
    environment.push_back(text);
  }
  for (const auto& [name, value] : set) {
    environment.push_back(name + "=" + value);
  }
  return environment;
}

// RunChild() is the forked child up to exec: a process group of its own,
// SIGTERM when the launcher dies, default signal handling, then exec. An
// exec failure's errno goes back through `error_fd` (closed on a successful
// exec, so the launcher reads EOF). Async-signal-safe calls only.
[[noreturn]] void RunChild(const ExecImage& image, const SignalRelay& relay,
                           pid_t launcher, int error_fd, const sigset_t& mask) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The launcher may have died before prctl took effect.
  if (getppid() != launcher) _exit(128 + SIGTERM);
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig : relay.handled()) sigaction(sig, &default_action, nullptr);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  execvpe(image.argv()[0], image.argv(), image.envp());
  const int err = errno;
  if (write(error_fd, &err, sizeof(err)) < 0) {
  }
  _exit(127);
}

// ReadExecError() is 0 once the child exec'd, else the errno of its exec.
int ReadExecError(int fd) {
  int err = 0;
  ssize_t n;
  do {
    n = read(fd, &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(err)) ? err : 0;
}

void ReapBlocking(pid_t pid) {
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// ExecError() carries the errno in the code, so that kindling-launch can
// exit 127 or 126 as a shell does for a missing or non-executable program.
absl::Status ExecError(const std::string& program, int err) {
  const std::string message =
      absl::StrFormat("cannot run '%s': %s", program, ErrnoText(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == ENOEXEC) {
    return absl::PermissionDeniedError(message);
  }
  return absl::FailedPreconditionError(message);
}

// Spawn() starts one rank and returns its pid once it runs the program.
absl::StatusOr<pid_t> Spawn(const ExecImage& image, const SignalRelay& relay) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError("cannot create a pipe: " + ErrnoText(errno));
  }
  // Signals stay blocked across fork so that the child cannot run the
  // launcher's handler (and wake its loop) before resetting it.
  sigset_t all, mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &mask);
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid == 0) RunChild(image, relay, launcher, fds[1], mask);
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return absl::ResourceExhaustedError("cannot fork: " +
                                        ErrnoText(fork_errno));
  }
  // The child calls setpgid too; whichever runs first, the group exists
  // before the launcher ever signals it.
  setpgid(pid, pid);
  const int exec_errno = ReadExecError(fds[0]);
  close(fds[0]);
  if (exec_errno != 0) {
    ReapBlocking(pid);
    return ExecError(image.program(), exec_errno);
  }
  return pid;
}

// --- Supervising ------------------------------------------------------------
// Job runs the loop: forward signals, reap ranks, stop the job on the first
// failure or stopping signal, SIGKILL after the grace period.
class Job {
 public:
  Job(const LocalLaunchOptions& options, SignalRelay& relay)
      : options_(options), relay_(relay) {}

  absl::Status Start(const std::vector<std::string>& argv, int port);
  // Stop() asks the running ranks to end (SIGTERM, then the grace period).
  void Stop();
  // Supervise() returns once every rank is reaped, with the job's status.
  int Supervise();

 private:
  struct Rank {
    int rank;
    pid_t pid;
    bool running;
  };

  void Report(const std::string& line) const {
    if (options_.report) options_.report(line);
  }
  void ForwardSignals();
  void ReapExited();
  void OnExit(const Rank& rank, const siginfo_t& info);
  void BeginStopping();
  void SignalRunning(int sig);
  bool AnyRunning() const;

  const LocalLaunchOptions& options_;
  SignalRelay& relay_;
  std::vector<Rank> ranks_;
  std::optional<int> first_failure_;
  std::optional<int> stop_signal_;
  bool stopping_ = false;
  bool killed_ = false;
  absl::Time deadline_ = absl::InfiniteFuture();
};

absl::Status Job::Start(const std::vector<std::string>& argv, int port) {
  Report(absl::StrFormat("starting %d rank(s) of '%s', rendezvous %s:%d",
                         options_.nproc, argv[0], options_.master_addr, port));
  for (int rank = 0; rank < options_.nproc; ++rank) {
    // Ctrl-C while starting: start no more; Supervise() forwards it.
    if (relay_.StopPending()) break;
    const ExecImage image(argv, RankEnvironment(options_, rank, port));
    absl::StatusOr<pid_t> pid = Spawn(image, relay_);
    if (!pid.ok()) return pid.status();
    ranks_.push_back({.rank = rank, .pid = *pid, .running = true});
  }
  return absl::OkStatus();
}

void Job::Stop() {
  if (stopping_) return;
  BeginStopping();
  SignalRunning(SIGTERM);
}

int Job::Supervise() {
  while (true) {
    ForwardSignals();
    ReapExited();
    if (!AnyRunning()) break;
    if (stopping_ && !killed_ && absl::Now() >= deadline_) {
      Report(absl::StrFormat("ranks still running %s after SIGTERM: SIGKILL",
                             absl::FormatDuration(options_.grace_period)));
      SignalRunning(SIGKILL);
      killed_ = true;
    }
    relay_.Wait(stopping_ && !killed_ ? deadline_ - absl::Now()
                                      : absl::InfiniteDuration());
  }
  if (first_failure_.has_value()) return *first_failure_;
  if (stop_signal_.has_value()) return 128 + *stop_signal_;
  return 0;
}

void Job::ForwardSignals() {
  for (int sig : kForwardedSignals) {
    if (!relay_.Forwards(sig)) continue;
    for (int n = relay_.Take(sig); n > 0; --n) {
      Report(absl::StrFormat("got %s: passing it on to every rank",
                             SignalName(sig)));
      SignalRunning(sig);
      if (StopsJob(sig) && !stopping_) {
        stop_signal_ = sig;
        BeginStopping();
      }
    }
  }
}

// ReapExited() looks at exited ranks with WNOWAIT first: while the zombie
// holds its pid, the pid still names the rank's process group, so the
// launcher can SIGKILL what the rank left behind without any chance of
// hitting an unrelated group that reused the number.
void Job::ReapExited() {
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    siginfo_t info = {};
    if (waitid(P_PID, rank.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;  // the next round looks again
      // ECHILD: someone else reaped it; its status is lost.
      info.si_code = CLD_EXITED;
      info.si_status = 1;
      info.si_pid = rank.pid;
    }
    if (info.si_pid == 0) continue;  // still running
    rank.running = false;
    OnExit(rank, info);
    if (stopping_) kill(-rank.pid, SIGKILL);
    ReapBlocking(rank.pid);
  }
}

void Job::OnExit(const Rank& rank, const siginfo_t& info) {
  const bool by_signal = info.si_code != CLD_EXITED;
  const int status = by_signal ? 128 + info.si_status : info.si_status;
  if (status == 0 || first_failure_.has_value()) return;
  first_failure_ = status;
  Report(by_signal ? absl::StrFormat("rank %d (pid %d) was killed by signal %d",
                                     rank.rank, rank.pid, info.si_status)
                   : absl::StrFormat("rank %d (pid %d) exited with status %d",
                                     rank.rank, rank.pid, info.si_status));
  if (stopping_) return;
  Report(absl::StrFormat("stopping the other ranks: SIGTERM, SIGKILL after %s",
                         absl::FormatDuration(options_.grace_period)));
  Stop();
}

void Job::BeginStopping() {
  stopping_ = true;
  deadline_ = absl::Now() + options_.grace_period;
}

// SignalRunning() signals each running rank's process group: the rank and
// whatever it started (a shell rank's commands).
void Job::SignalRunning(int sig) {
  for (const Rank& rank : ranks_) {
    if (rank.running) kill(-rank.pid, sig);
  }
}

bool Job::AnyRunning() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& rank) { return rank.running; });
}

// --- Options
// --------------------------------------------------------------------
absl::Status CheckOptions(const LocalLaunchOptions& options,
                          const std::vector<std::string>& argv) {
  if (options.nproc < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("nproc must be at least 1, got %d", options.nproc));
  }
  if (argv.empty() || argv[0].empty()) {
    return absl::InvalidArgumentError("no program to run");
  }
  if (options.master_addr.empty()) {
    return absl::InvalidArgumentError(
        "master_addr is empty: give rank 0's address, e.g. 127.0.0.1");
  }
  if (options.master_port < 0 || options.master_port > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "master_port must be 0 (pick a free port) to 65535, got %d",
        options.master_port));
  }
  if (options.grace_period < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("grace_period must not be negative");
  }
  return absl::OkStatus();
}

// PickFreePort() asks the kernel for a free port on `host` (an IPv4
// address; 127.0.0.1 for a name). Another process may take it before rank
// 0 binds it; the rendezvous store then says the port is in use.
absl::StatusOr<int> PickFreePort(const std::string& host) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError("cannot create a socket: " + ErrnoText(errno));
  }
  struct sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&address), length) != 0 ||
      getsockname(fd, reinterpret_cast<struct sockaddr*>(&address), &length) !=
          0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrFormat(
        "cannot pick a free port on %s: %s", host, ErrnoText(err)));
  }
  close(fd);
  return static_cast<int>(ntohs(address.sin_port));
}

}  // namespace

absl::StatusOr<int> LaunchLocal(const LocalLaunchOptions& options,
                                const std::vector<std::string>& argv) {
  if (absl::Status status = CheckOptions(options, argv); !status.ok()) {
    return status;
  }
  int port = options.master_port;
  if (port == 0) {
    absl::StatusOr<int> picked = PickFreePort(options.master_addr);
    if (!picked.ok()) return picked.status();
    port = *picked;
  }
  absl::StatusOr<std::unique_ptr<SignalRelay>> relay = SignalRelay::Install();
  if (!relay.ok()) return relay.status();
  Job job(options, **relay);
  if (absl::Status started = job.Start(argv, port); !started.ok()) {
    job.Stop();
    // The ranks already started are reaped; their status does not matter
    // next to the launcher's own failure.
    job.Supervise();
    return started;
  }
  return job.Supervise();
}

}  // namespace kindling::distributed
