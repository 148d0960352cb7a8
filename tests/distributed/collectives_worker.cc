// collectives_worker: one rank of an MPI job that checks the MPI
// Communicator (mpi_collectives_test.sh and mpi_timeout_test.sh run it under
// mpirun).
//
//   mpirun -np 3 collectives_worker                  # RunCollectiveChecks()
//   mpirun -np 2 collectives_worker --max_count=1000 # same, in 1000-element
//                                                    # MPI calls
//   mpirun -np 2 collectives_worker --mode=skip --timeout_s=2
//       # rank 1 skips an AllReduce: the others must get DeadlineExceeded
//   mpirun -np 2 collectives_worker --mode=die
//       # rank 1 ends without MPI_Finalize during an AllReduce
//   mpirun -np 2 collectives_worker --expect_mca=NAME=VALUE,...
//       # also checks the values Open MPI took for MCA variables (an enum
//       # by its item's name: coll_libnbc_iallreduce_algorithm=rabenseifner)
//
// Every rank prints `rank R: N failures` last (mode die: the surviving
// ranks, if mpirun lets them) and exits 0 iff N is 0.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/mpi_communicator.h"
#include "tests/distributed/collective_checks.h"

ABSL_FLAG(std::string, mode, "checks",
          "checks: RunCollectiveChecks(); skip: rank 1 skips an AllReduce; "
          "die: rank 1 ends during an AllReduce");
ABSL_FLAG(double, timeout_s, 60, "the communicator's timeout in seconds");
ABSL_FLAG(int, max_count, 0,
          "if positive, the most elements (bytes) one MPI call moves");
ABSL_FLAG(std::vector<std::string>, expect_mca, {},
          "NAME=VALUE,...: MCA variables (as MPI_T reads them; an enum by "
          "its item's name) that must have these values once connected");

namespace kindling::distributed {
namespace {

constexpr int kSilentRank = 1;

// Report() prints a check's line and counts a failure.
void Report(const std::string& name, const absl::Status& status,
            int* failures) {
  if (status.ok()) {
    std::printf("PASS %s\n", name.c_str());
  } else {
    ++*failures;
    std::printf("FAIL %s: %s\n", name.c_str(), status.ToString().c_str());
  }
  std::fflush(stdout);
}

// EnumItemName() is the name MPI_T enum `type` gives `value`, if any.
std::optional<std::string> EnumItemName(MPI_T_enum type, int value) {
  int items = 0;
  char name[256];
  int name_length = sizeof(name);
  if (MPI_T_enum_get_info(type, &items, name, &name_length) != MPI_SUCCESS) {
    return std::nullopt;
  }
  for (int i = 0; i < items; ++i) {
    int item_value = 0;
    name_length = sizeof(name);
    if (MPI_T_enum_get_item(type, i, &item_value, name, &name_length) ==
            MPI_SUCCESS &&
        item_value == value) {
      return std::string(name);
    }
  }
  return std::nullopt;
}

// ReadIntCvar() is the value of the integer control variable `name` (an
// enum's by its item's name), with MPI_T initialized.
absl::StatusOr<std::string> ReadIntCvar(const std::string& name) {
  int index = 0;
  if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS) {
    return absl::NotFoundError(absl::StrCat("no MCA variable ", name));
  }
  int verbosity = 0, bind = 0, scope = 0;
  MPI_Datatype type;
  MPI_T_enum enum_type = MPI_T_ENUM_NULL;
  if (MPI_T_cvar_get_info(index, nullptr, nullptr, &verbosity, &type,
                          &enum_type, nullptr, nullptr, &bind,
                          &scope) != MPI_SUCCESS ||
      type != MPI_INT) {
    return absl::InternalError(absl::StrCat(name, " is not an int"));
  }
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) {
    return absl::InternalError(absl::StrCat("no handle for ", name));
  }
  int value = 0;
  MPI_T_cvar_read(handle, &value);
  MPI_T_cvar_handle_free(&handle);
  if (enum_type != MPI_T_ENUM_NULL) {
    if (std::optional<std::string> item = EnumItemName(enum_type, value)) {
      return *item;
    }
  }
  return absl::StrCat(value);
}

// ReadMcaVariable() reads an Open MPI MCA variable through the MPI tool
// interface.
absl::StatusOr<std::string> ReadMcaVariable(const std::string& name) {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    return absl::InternalError("MPI_T_init_thread failed");
  }
  absl::StatusOr<std::string> value = ReadIntCvar(name);
  MPI_T_finalize();
  return value;
}

// CheckMcaVariables() compares each NAME=VALUE of --expect_mca with what
// Open MPI took.
void CheckMcaVariables(int* failures) {
  for (const std::string& expected : absl::GetFlag(FLAGS_expect_mca)) {
    const std::pair<std::string, std::string> name_value =
        absl::StrSplit(expected, absl::MaxSplits('=', 1));
    const auto& [name, want] = name_value;
    absl::StatusOr<std::string> got = ReadMcaVariable(name);
    absl::Status status = got.status();
    if (got.ok() && *got != want) {
      status = absl::FailedPreconditionError(
          absl::StrFormat("%s is %s, expected %s", name, *got, want));
    }
    Report(absl::StrCat("MCA variable ", name), status, failures);
  }
}

// ExpectTimeout(): an AllReduce that rank 1 never joins ends in
// DeadlineExceeded naming it, after the timeout and not much later; the
// broken communicator then refuses a Barrier at once.
int ExpectTimeout(Communicator& comm) {
  int failures = 0;
  std::vector<float> data(1000, 1.0f);
  const absl::Time start = absl::Now();
  const absl::Status status =
      comm.AllReduce(data.data(), data.size(), DType::kF32, ReduceOp::kSum);
  const absl::Duration took = absl::Now() - start;
  std::printf("rank %d: AllReduce returned after %s: %s\n", comm.rank(),
              absl::FormatDuration(took).c_str(), status.ToString().c_str());
  Report("AllReduce without a peer is DeadlineExceeded naming AllReduce",
         absl::IsDeadlineExceeded(status) &&
                 absl::StrContains(status.message(), "AllReduce") &&
                 absl::StrContains(status.message(), "1000")
             ? absl::OkStatus()
             : absl::InternalError(status.ToString()),
         &failures);
  const absl::Duration margin = absl::Seconds(2);
  Report("it returns within the timeout and a margin",
         took >= comm.timeout() && took <= comm.timeout() + margin
             ? absl::OkStatus()
             : absl::InternalError(absl::StrFormat(
                   "took %s with a timeout of %s", absl::FormatDuration(took),
                   absl::FormatDuration(comm.timeout()))),
         &failures);
  const absl::Time barrier_start = absl::Now();
  const absl::Status barrier = comm.Barrier();
  const absl::Duration barrier_took = absl::Now() - barrier_start;
  Report("the broken communicator refuses a Barrier at once",
         absl::IsFailedPrecondition(barrier) &&
                 barrier_took < absl::Milliseconds(100)
             ? absl::OkStatus()
             : absl::InternalError(absl::StrFormat(
                   "after %s: %s", absl::FormatDuration(barrier_took),
                   barrier.ToString())),
         &failures);
  return failures;
}

int Run() {
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const absl::Duration timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout_s));
  const int max_count = absl::GetFlag(FLAGS_max_count);
  if (!StartedByMpirun()) {
    std::printf("note: not started by mpirun; a world of one process\n");
  }
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      max_count > 0 ? internal::ConnectMpiWithMaxCount(timeout, max_count)
                    : ConnectMpi(timeout);
  if (!comm.ok()) {
    std::printf("ConnectMpi failed: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = (*comm)->rank();
  std::printf("rank %d: MPI thread level %s\n", rank, MpiThreadLevel().c_str());
  int failures = 0;
  CheckMcaVariables(&failures);
  if (mode == "checks") {
    failures += RunCollectiveChecks(**comm);
  } else if (mode == "skip" || mode == "die") {
    if ((*comm)->world_size() <= kSilentRank) {
      std::printf("mode %s needs at least 2 ranks\n", mode.c_str());
      return 1;
    }
    if (rank == kSilentRank) {
      std::printf("rank %d: %s instead of the AllReduce\n", rank,
                  mode == "skip" ? "sleeping" : "ending");
      std::fflush(stdout);
      // die: end as a crash does, without MPI_Finalize or atexit handlers.
      if (mode == "die") std::_Exit(3);
      absl::SleepFor(timeout + absl::Seconds(3));
      return 0;  // MPI_Finalize then waits until rank 0's MPI_Abort ends it
    }
    failures += ExpectTimeout(**comm);
  } else {
    std::printf("unknown --mode=%s\n", mode.c_str());
    return 1;
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
