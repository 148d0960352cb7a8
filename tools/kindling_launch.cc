// kindling-launch: N copies of a training program on this machine, as one
// data-parallel job (torchrun's --standalone for Kindling).
//
//   kindling-launch --nproc 4 -- ./train --epochs=3
//
// Each copy gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR
// and MASTER_PORT; Ctrl-C and SIGTERM reach every copy; when one fails the
// others are stopped. The exit status is the job's (see local_launcher.h):
// 0, the first failing rank's status, or 128 + the signal that stopped the
// job. Usage errors exit 2; a program that cannot be run exits 127 (not
// found) or 126 (not executable), as shells do.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kindling/distributed/local_launcher.h"

ABSL_FLAG(int, nproc, 0, "number of processes (ranks) to start; required");
ABSL_FLAG(std::string, master_addr, "127.0.0.1",
          "address rank 0's rendezvous store binds to");
ABSL_FLAG(int, master_port, 0,
          "port of rank 0's rendezvous store (0: pick a free port)");
ABSL_FLAG(double, grace_seconds, 30,
          "seconds ranks have between SIGTERM and SIGKILL when the job stops");

namespace {

constexpr int kUsageError = 2;
constexpr const char kUsage[] =
    "kindling-launch --nproc N [--master_addr A] [--master_port P] "
    "[--grace_seconds S] -- program args...";

int UsageError(const std::string& message) {
  std::fprintf(stderr, "kindling-launch: %s\nusage: %s\n", message.c_str(),
               kUsage);
  return kUsageError;
}

// ExitCodeFor() maps a launcher failure to a shell-like exit status.
int ExitCodeFor(const absl::Status& status) {
  if (absl::IsNotFound(status)) return 127;
  if (absl::IsPermissionDenied(status)) return 126;
  if (absl::IsInvalidArgument(status)) return kUsageError;
  return 1;
}

// --help lists the flags of this file: absl matches flag files against the
// program's name, and "kindling-launch" is not "kindling_launch".
void ConfigureHelp() {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return absl::StrContains(path, "kindling_launch");
  };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(kUsage);
}

}  // namespace

int main(int argc, char** argv) {
  ConfigureHelp();
  // ParseCommandLine() returns argv[0] followed by the positional arguments:
  // everything after `--`, and any non-flag before it.
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  const std::vector<std::string> program(positional.begin() + 1,
                                         positional.end());
  const int nproc = absl::GetFlag(FLAGS_nproc);
  const double grace_seconds = absl::GetFlag(FLAGS_grace_seconds);
  if (nproc == 0) return UsageError("--nproc is required (e.g. --nproc 2)");
  if (nproc < 1) {
    return UsageError(
        absl::StrFormat("--nproc must be at least 1, got %d", nproc));
  }
  if (program.empty()) {
    return UsageError("no program: put it after `--`");
  }
  if (grace_seconds < 0) {
    return UsageError("--grace_seconds must not be negative");
  }
  kindling::distributed::LocalLaunchOptions options;
  options.nproc = nproc;
  options.master_addr = absl::GetFlag(FLAGS_master_addr);
  options.master_port = absl::GetFlag(FLAGS_master_port);
  options.grace_period = absl::Seconds(grace_seconds);
  options.report = [](const std::string& line) {
    std::fprintf(stderr, "kindling-launch: %s\n", line.c_str());
  };
  absl::StatusOr<int> status =
      kindling::distributed::LaunchLocal(options, program);
  if (!status.ok()) {
    std::fprintf(stderr, "kindling-launch: %s\n",
                 std::string(status.status().message()).c_str());
    return ExitCodeFor(status.status());
  }
  return *status;
}
