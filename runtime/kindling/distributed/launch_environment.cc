#include "kindling/distributed/launch_environment.h"

#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace kindling::distributed {
namespace {

// The variable names of one launcher's rank and size; errors name the ones
// the user actually set.
struct RankNames {
  std::string rank;
  std::string world_size;
  std::string local_rank;
  std::string local_world_size;
};

const RankNames& EnvironmentNames() {
  static const RankNames* names =
      new RankNames{"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
  return *names;
}

const RankNames& MpirunNames() {
  static const RankNames* names =
      new RankNames{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
  return *names;
}

// Get() treats an empty value as not set.
std::optional<std::string> Get(const EnvironmentLookup& lookup,
                               const std::string& name) {
  std::optional<std::string> value = lookup(name);
  if (value.has_value() && value->empty()) return std::nullopt;
  return value;
}

bool AnySet(const EnvironmentLookup& lookup, const RankNames& names) {
  return Get(lookup, names.rank) || Get(lookup, names.world_size) ||
         Get(lookup, names.local_rank) || Get(lookup, names.local_world_size);
}

// SetOthers() names the launch variables other than rank and world size
// that are set ("LOCAL_RANK, MASTER_PORT").
std::string SetOthers(const EnvironmentLookup& lookup, const RankNames& names) {
  std::string set;
  for (const std::string& name :
       {names.local_rank, names.local_world_size, std::string("MASTER_ADDR"),
        std::string("MASTER_PORT")}) {
    if (!Get(lookup, name)) continue;
    if (!set.empty()) set += ", ";
    set += name;
  }
  return set;
}

// ReadInt() is nullopt when `name` is not set, an error when it is set to
// something other than an integer.
absl::StatusOr<std::optional<int>> ReadInt(const EnvironmentLookup& lookup,
                                           const std::string& name) {
  std::optional<std::string> text = Get(lookup, name);
  if (!text.has_value()) return std::optional<int>();
  int value = 0;
  if (!absl::SimpleAtoi(*text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be an integer, got '%s'", name, *text));
  }
  return std::optional<int>(value);
}

// RequirePair() accepts both of rank and world size, or explains which is
// missing; `others` names the launch variables that are set without them.
absl::Status RequirePair(const std::optional<int>& rank,
                         const std::optional<int>& world_size,
                         const RankNames& names, const std::string& others) {
  if (rank.has_value() && world_size.has_value()) return absl::OkStatus();
  if (rank.has_value()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is set but %s is not: set %s to the number of processes",
        names.rank, names.world_size, names.world_size));
  }
  if (world_size.has_value()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is set but %s is not: set %s to this process's rank, 0 to %s-1",
        names.world_size, names.rank, names.rank, names.world_size));
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s and %s are not set, but %s is: set %s and %s (e.g. %s=0 %s=1), or "
      "unset %s for a single process",
      names.rank, names.world_size, others, names.rank, names.world_size,
      names.rank, names.world_size, others));
}

absl::Status CheckGlobal(int rank, int world_size, const RankNames& names) {
  if (world_size < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s must be at least 1, got %d", names.world_size, world_size));
  }
  if (rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be non-negative, got %d", names.rank, rank));
  }
  if (rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%d is not below %s=%d: ranks run from 0 to %s-1", names.rank, rank,
        names.world_size, world_size, names.world_size));
  }
  return absl::OkStatus();
}

// ReadLocal() fills local_world_size (default: world_size) and local_rank
// (default: rank) and checks that they describe a place on one host.
absl::Status ReadLocal(const EnvironmentLookup& lookup, const RankNames& names,
                       LaunchEnvironment& env) {
  absl::StatusOr<std::optional<int>> local_size =
      ReadInt(lookup, names.local_world_size);
  if (!local_size.ok()) return local_size.status();
  absl::StatusOr<std::optional<int>> local_rank =
      ReadInt(lookup, names.local_rank);
  if (!local_rank.ok()) return local_rank.status();
  env.local_world_size = local_size->value_or(env.world_size);
  env.local_rank = local_rank->value_or(env.rank);
  if (env.local_world_size < 1 || env.local_world_size > env.world_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s must be between 1 and %s=%d, got %d", names.local_world_size,
        names.world_size, env.world_size, env.local_world_size));
  }
  if (env.local_rank < 0 || env.local_rank >= env.local_world_size) {
    const std::string given =
        local_rank->has_value()
            ? absl::StrFormat("%s=%d", names.local_rank, env.local_rank)
            : absl::StrFormat("%s (defaulted to %s=%d)", names.local_rank,
                              names.rank, env.local_rank);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not in 0..%s-1 (%s=%d): set %s to this process's index on "
        "its host",
        given, names.local_world_size, names.local_world_size,
        env.local_world_size, names.local_rank));
  }
  return absl::OkStatus();
}

// ReadRanks() fills the four rank fields from one launcher's variables.
absl::Status ReadRanks(const EnvironmentLookup& lookup, const RankNames& names,
                       LaunchEnvironment& env) {
  absl::StatusOr<std::optional<int>> rank = ReadInt(lookup, names.rank);
  if (!rank.ok()) return rank.status();
  absl::StatusOr<std::optional<int>> world_size =
      ReadInt(lookup, names.world_size);
  if (!world_size.ok()) return world_size.status();
  if (absl::Status status =
          RequirePair(*rank, *world_size, names, SetOthers(lookup, names));
      !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckGlobal(**rank, **world_size, names);
      !status.ok()) {
    return status;
  }
  env.rank = **rank;
  env.world_size = **world_size;
  return ReadLocal(lookup, names, env);
}

// ReadPort() is 0 when MASTER_PORT is not set and not `required`.
absl::StatusOr<int> ReadPort(const EnvironmentLookup& lookup, bool required,
                             int world_size) {
  absl::StatusOr<std::optional<int>> port = ReadInt(lookup, "MASTER_PORT");
  if (!port.ok()) return port.status();
  if (!port->has_value()) {
    if (!required) return 0;
    return absl::InvalidArgumentError(absl::StrFormat(
        "MASTER_PORT is not set: with WORLD_SIZE=%d rank 0 hosts the "
        "rendezvous store on a TCP port every rank must know, e.g. "
        "MASTER_PORT=29500",
        world_size));
  }
  if (**port < 1 || **port > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MASTER_PORT must be a TCP port, 1 to 65535, got %d", **port));
  }
  return **port;
}

absl::StatusOr<std::string> ReadAddress(const EnvironmentLookup& lookup,
                                        int world_size) {
  std::optional<std::string> addr = Get(lookup, "MASTER_ADDR");
  if (addr.has_value()) return *addr;
  if (world_size == 1) return std::string("127.0.0.1");
  return absl::InvalidArgumentError(absl::StrFormat(
      "MASTER_ADDR is not set: with WORLD_SIZE=%d every rank needs the "
      "address of rank 0's host, e.g. MASTER_ADDR=10.0.0.1 (kindling-launch "
      "sets it for processes on one machine)",
      world_size));
}

absl::StatusOr<LaunchEnvironment> ReadMpirun(const EnvironmentLookup& lookup) {
  LaunchEnvironment env;
  env.launcher = LaunchEnvironment::Launcher::kMpirun;
  if (absl::Status status = ReadRanks(lookup, MpirunNames(), env);
      !status.ok()) {
    return status;
  }
  // MPI finds its peers by itself; MASTER_* only matter when the job also
  // wants a TCP store, so both are optional here.
  env.master_addr = Get(lookup, "MASTER_ADDR").value_or("");
  absl::StatusOr<int> port = ReadPort(lookup, /*required=*/false, 0);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  return env;
}

absl::StatusOr<LaunchEnvironment> ReadVariables(
    const EnvironmentLookup& lookup) {
  LaunchEnvironment env;
  env.launcher = LaunchEnvironment::Launcher::kEnvironment;
  if (absl::Status status = ReadRanks(lookup, EnvironmentNames(), env);
      !status.ok()) {
    return status;
  }
  // A shared directory replaces rank 0's TCP store (Gloo's file store).
  env.store_path = Get(lookup, "KINDLING_STORE_PATH").value_or("");
  const bool tcp_store = env.world_size > 1 && env.store_path.empty();
  if (tcp_store) {
    absl::StatusOr<std::string> addr = ReadAddress(lookup, env.world_size);
    if (!addr.ok()) return addr.status();
    env.master_addr = *addr;
  } else {
    env.master_addr = Get(lookup, "MASTER_ADDR")
                          .value_or(env.world_size == 1 ? "127.0.0.1" : "");
  }
  absl::StatusOr<int> port = ReadPort(lookup, tcp_store, env.world_size);
  if (!port.ok()) return port.status();
  env.master_port = *port;
  return env;
}

const char* LauncherName(LaunchEnvironment::Launcher launcher) {
  switch (launcher) {
    case LaunchEnvironment::Launcher::kSingle:
      return "single process";
    case LaunchEnvironment::Launcher::kEnvironment:
      return "launched by environment";
    case LaunchEnvironment::Launcher::kMpirun:
      return "launched by mpirun";
  }
  return "launched by an unknown launcher";
}

}  // namespace

std::string LaunchEnvironment::ToString() const {
  const std::string rendezvous =
      master_port == 0
          ? std::string("no rendezvous store")
          : absl::StrFormat("rendezvous %s:%d", master_addr, master_port);
  return absl::StrFormat("rank %d of %d (local %d), %s, %s", rank, world_size,
                         local_rank, rendezvous, LauncherName(launcher));
}

absl::StatusOr<LaunchEnvironment> ReadLaunchEnvironment(
    const EnvironmentLookup& lookup) {
  // mpirun first: a job started by mpirun may have inherited RANK & co. from
  // the shell, but OMPI_COMM_WORLD_* are always mpirun's own.
  if (AnySet(lookup, MpirunNames())) return ReadMpirun(lookup);
  const bool any_master =
      Get(lookup, "MASTER_ADDR") || Get(lookup, "MASTER_PORT");
  if (AnySet(lookup, EnvironmentNames()) || any_master) {
    return ReadVariables(lookup);
  }
  return LaunchEnvironment{};
}

absl::StatusOr<LaunchEnvironment> ReadLaunchEnvironment() {
  return ReadLaunchEnvironment(
      [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
      });
}

}  // namespace kindling::distributed
