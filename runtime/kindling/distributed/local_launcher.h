// LaunchLocal: N copies of one program on this machine, as a data-parallel
// job (what `kindling-launch --nproc N -- program args...` runs). Each copy
// gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT (launch_environment.h reads them) and inherits stdin, stdout
// and stderr.
//
//   absl::StatusOr<int> exit_code = LaunchLocal({.nproc = 2}, {"./train"});
//
// The job lives and dies as one:
// - SIGTERM, SIGINT, SIGUSR1 and SIGHUP sent to the launcher reach every
//   rank exactly once (Ctrl-C included, see "Process groups" below).
// - When a rank exits non-zero or by a signal, the others get SIGTERM, then
//   SIGKILL after the grace period; the result is that first failure's
//   status (its exit code, or 128 + signal as shells report it).
// - After SIGTERM, SIGINT or SIGHUP the ranks get the grace period to save
//   and exit, then SIGKILL; the result is the first failing rank's status,
//   or 128 + the signal when every rank exited 0 (an interrupted job must
//   not look like a finished one to a scheduler).
// - All ranks exit 0: the result is 0.
// No rank outlives the launcher: it reaps every one, and a rank whose
// launcher dies (even by SIGKILL) gets SIGTERM from the kernel
// (PR_SET_PDEATHSIG).
//
// Process groups: each rank runs in a process group of its own, and the
// launcher forwards every signal. The alternative, ranks in the launcher's
// group, would let the terminal's Ctrl-C reach them directly, but then the
// launcher could not tell a terminal's SIGINT (already delivered to the
// ranks) from a `kill -INT <launcher>` (not delivered) or a `kill -INT
// -<group>` (delivered), so some rank would get it twice or never. With
// groups of their own the launcher is the only way in: exactly once. The
// groups also let the launcher signal a rank's own children (a `bash -c`
// rank's commands) when it stops the job. The price: ranks are not in the
// terminal's foreground group, so a rank that reads the terminal (or writes
// to one set to `stty tostop`) stops, and Ctrl-Z stops only the launcher;
// training processes do neither.
#ifndef KINDLING_DISTRIBUTED_LOCAL_LAUNCHER_H_
#define KINDLING_DISTRIBUTED_LOCAL_LAUNCHER_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kindling::distributed {

struct LocalLaunchOptions {
  // nproc: how many ranks (processes), at least 1.
  int nproc = 1;
  // master_addr:master_port is where rank 0 hosts the rendezvous store.
  std::string master_addr = "127.0.0.1";
  // master_port 0 picks a free port: the launcher binds a socket to port 0,
  // reads the port the kernel chose and closes it before starting the ranks.
  int master_port = 0;
  // grace_period: how long ranks have between SIGTERM (or a forwarded
  // SIGTERM/SIGINT/SIGHUP) and SIGKILL.
  absl::Duration grace_period = absl::Seconds(30);
  // environment: extra variables for every rank (NAME, value). The launch
  // variables above win over an entry of the same name.
  std::vector<std::pair<std::string, std::string>> environment;
  // report, when set, gets one line per event worth a log line (a rank
  // failed, a signal was forwarded, ranks were killed after the grace
  // period). kindling-launch prints them to stderr.
  std::function<void(const std::string&)> report;
};

// LaunchLocal() runs argv (argv[0] is looked up in PATH as execvp does)
// options.nproc times and returns the job's exit status as described above.
// An error status means the launcher itself failed: bad options
// (InvalidArgument), a fork, or a program that cannot be run ("cannot run
// 'foo': No such file or directory": NotFound, PermissionDenied when it is
// not executable); any rank already started is stopped and reaped first.
// One LaunchLocal() at a time per process (it owns the signal handlers for
// its duration); call it from the main thread, since the kernel's
// parent-death signal follows the thread that forked.
[[nodiscard]] absl::StatusOr<int> LaunchLocal(
    const LocalLaunchOptions& options, const std::vector<std::string>& argv);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_LOCAL_LAUNCHER_H_
