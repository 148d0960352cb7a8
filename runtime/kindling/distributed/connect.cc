#include "kindling/distributed/connect.h"

#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kindling/distributed/gloo_communicator.h"
#include "kindling/distributed/mpi_communicator.h"

namespace kindling::distributed {
namespace {

class Solo : public Communicator {
 public:
  Solo()
      : Communicator(/*rank=*/0, /*world_size=*/1, absl::InfiniteDuration()) {}
  std::string backend() const override { return "solo"; }
  Device device() const override { return Device::Cpu(); }
  absl::Status AllReduce(void*, int64_t, DType dtype, ReduceOp) override {
    if (!IsReducibleDType(dtype)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AllReduce: dtype %s cannot be reduced",
                          std::string(DTypeName(dtype))));
    }
    return absl::OkStatus();
  }
  absl::Status Broadcast(void*, int64_t, int root) override {
    return CheckRoot(root, "Broadcast");
  }
  absl::Status AllGather(const void* in, void* out, int64_t bytes) override {
    if (bytes > 0 && in != out) std::memmove(out, in, bytes);
    return absl::OkStatus();
  }
  absl::Status Barrier() override { return absl::OkStatus(); }
};

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGlooFrom(
    const LaunchEnvironment& launch, const ConnectOptions& options) {
  if (launch.master_addr.empty() || launch.master_port == 0) {
    return absl::InvalidArgumentError(
        "the Gloo backend needs MASTER_ADDR and MASTER_PORT (rank 0's "
        "address and a free port) in every rank's environment");
  }
  GlooOptions gloo{.rank = launch.rank,
                   .world_size = launch.world_size,
                   .timeout = options.timeout};
  gloo.store.host = launch.master_addr;
  gloo.store.port = launch.master_port;
  gloo.store.timeout = options.timeout;
  gloo.store.token = options.token;
  return ConnectGloo(gloo);
}

}  // namespace

absl::StatusOr<Backend> ParseBackend(const std::string& text) {
  if (text == "auto") return Backend::kAuto;
  if (text == "gloo") return Backend::kGloo;
  if (text == "mpi") return Backend::kMpi;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown distributed backend '%s' (expected auto, gloo or mpi)", text));
}

std::unique_ptr<Communicator> SoloCommunicator() {
  return std::make_unique<Solo>();
}

absl::StatusOr<std::unique_ptr<Communicator>> Connect(
    const LaunchEnvironment& launch, const ConnectOptions& options) {
  using Launcher = LaunchEnvironment::Launcher;
  Backend backend = options.backend;
  if (backend == Backend::kAuto) {
    if (launch.launcher == Launcher::kMpirun) {
      backend = Backend::kMpi;
    } else if (launch.world_size == 1) {
      return SoloCommunicator();
    } else {
      backend = Backend::kGloo;
    }
  }
  if (backend == Backend::kMpi) {
    if (launch.launcher != Launcher::kMpirun) {
      return absl::FailedPreconditionError(
          "the MPI backend needs the process to be started by mpirun (mpirun "
          "-np N program ...)");
    }
    return ConnectMpi(options.timeout);
  }
  return ConnectGlooFrom(launch, options);
}

}  // namespace kindling::distributed
