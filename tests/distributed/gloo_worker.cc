// gloo_worker: one rank of a Gloo job started through the launch variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), for gloo_collectives_test.sh.
//
//   gloo_worker                  # RunCollectiveChecks() on Gloo
//   gloo_worker --mode=die       # rank 1 ends while the others all-reduce:
//                                # they must fail naming rank 1, quickly
//   gloo_worker --mode=skip --timeout_s=2
//                                # rank 1 stays silent: DeadlineExceeded
//                                # after the timeout, not a hang
//
// Every surviving rank prints `rank R: N failures` last and exits 0 iff N is
// 0.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/connect.h"
#include "kindling/distributed/launch_environment.h"
#include "tests/distributed/collective_checks.h"

ABSL_FLAG(std::string, mode, "checks", "checks, die or skip (see above)");
ABSL_FLAG(double, timeout_s, 60, "the communicator's timeout in seconds");
ABSL_FLAG(bool, own_sigpipe_handler, false,
          "install a SIGPIPE handler before connecting; it must stay");

namespace kindling::distributed {
namespace {

constexpr int kSilentRank = 1;

// ExpectLostPeer(): an AllReduce rank 1 does not join fails within the
// timeout and a margin, with an error naming the operation; `lost_rank`
// (when set) must be named too.
int ExpectLostPeer(Communicator& comm, bool expect_named) {
  std::vector<float> data(1000, 1.0f);
  const absl::Time start = absl::Now();
  const absl::Status status =
      comm.AllReduce(data.data(), data.size(), DType::kF32, ReduceOp::kSum);
  const absl::Duration took = absl::Now() - start;
  std::printf("rank %d: AllReduce returned after %s: %s\n", comm.rank(),
              absl::FormatDuration(took).c_str(), status.ToString().c_str());
  int failures = 0;
  if (status.ok() || !absl::StrContains(status.message(), "AllReduce")) {
    std::printf("FAIL the error names AllReduce\n");
    ++failures;
  }
  if (expect_named && !absl::StrContains(status.message(), "rank 1 is lost")) {
    std::printf("FAIL the error names the lost rank 1\n");
    ++failures;
  }
  if (took > comm.timeout() + absl::Seconds(5)) {
    std::printf("FAIL it took %s with a timeout of %s\n",
                absl::FormatDuration(took).c_str(),
                absl::FormatDuration(comm.timeout()).c_str());
    ++failures;
  }
  const absl::Status barrier = comm.Barrier();
  if (!absl::IsFailedPrecondition(barrier)) {
    std::printf("FAIL the broken communicator refuses a Barrier: %s\n",
                barrier.ToString().c_str());
    ++failures;
  }
  return failures;
}

void OwnSigpipeHandler(int) {}

// SigpipeFailures(): connecting must leave SIGPIPE ignored (Gloo's writes to
// a lost peer raise it) or, when the program had its own handler, that one.
int SigpipeFailures(bool own_handler) {
  struct sigaction now {};
  sigaction(SIGPIPE, nullptr, &now);
  const auto expected = own_handler ? &OwnSigpipeHandler : SIG_IGN;
  if (now.sa_handler == expected) return 0;
  std::printf("FAIL SIGPIPE is %s after connecting\n",
              now.sa_handler == SIG_DFL ? "default" : "another handler");
  return 1;
}

int Run() {
  const std::string mode = absl::GetFlag(FLAGS_mode);
  absl::StatusOr<LaunchEnvironment> launch = ReadLaunchEnvironment();
  if (!launch.ok()) {
    std::printf("launch: %s\n", launch.status().ToString().c_str());
    return 1;
  }
  const bool own_handler = absl::GetFlag(FLAGS_own_sigpipe_handler);
  if (own_handler) signal(SIGPIPE, &OwnSigpipeHandler);
  absl::StatusOr<std::unique_ptr<Communicator>> comm = Connect(
      *launch, {.backend = Backend::kGloo,
                .timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s))});
  if (!comm.ok()) {
    std::printf("connect: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = (*comm)->rank();
  int failures = SigpipeFailures(own_handler);
  if (mode == "checks") {
    failures += RunCollectiveChecks(**comm);
  } else if (!(*comm)->Barrier().ok()) {
    // Every connection is up before rank 1 leaves (a rank that ends during
    // the rendezvous fails the others' Connect instead).
    std::printf("rank %d: the first Barrier failed\n", rank);
    return 1;
  } else if (rank == kSilentRank) {
    std::printf("rank %d: %s instead of the AllReduce\n", rank,
                mode == "die" ? "ending" : "sleeping");
    std::fflush(stdout);
    if (mode == "die") std::_Exit(3);  // as a crash: no goodbye
    absl::SleepFor((*comm)->timeout() + absl::Seconds(3));
    return 0;
  } else {
    failures += ExpectLostPeer(**comm, /*expect_named=*/mode == "die");
  }
  std::printf("rank %d: %d failures\n", rank, failures);
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kindling::distributed

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return kindling::distributed::Run();
}
