#include "kindling/distributed/connect.h"

#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kindling/distributed/gloo_communicator.h"
#include "kindling/distributed/mpi_communicator.h"
#if KINDLING_HAVE_NCCL
#include "kindling/distributed/nccl_communicator.h"
#endif

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

// StoreFrom() is the rendezvous store the launch names (Gloo's and NCCL's).
absl::StatusOr<StoreOptions> StoreFrom(const LaunchEnvironment& launch,
                                       const ConnectOptions& options,
                                       const char* backend) {
  if (launch.master_addr.empty() || launch.master_port == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the %s backend needs MASTER_ADDR and MASTER_PORT (rank 0's "
        "address and a free port) in every rank's environment",
        backend));
  }
  StoreOptions store;
  store.host = launch.master_addr;
  store.port = launch.master_port;
  store.timeout = options.timeout;
  store.token = options.token;
  return store;
}

absl::StatusOr<std::unique_ptr<Communicator>> ConnectNcclFrom(
    const LaunchEnvironment& launch, const ConnectOptions& options) {
#if KINDLING_HAVE_NCCL
  absl::StatusOr<StoreOptions> store = StoreFrom(launch, options, "NCCL");
  if (!store.ok()) return store.status();
  return ConnectNccl({.rank = launch.rank,
                      .world_size = launch.world_size,
                      .device_index = launch.local_rank,
                      .store = *store,
                      .timeout = options.timeout});
#else
  return absl::FailedPreconditionError(
      "the NCCL backend needs a build with --config=cuda");
#endif
}

}  // namespace

absl::StatusOr<Backend> ParseBackend(const std::string& text) {
  if (text == "auto") return Backend::kAuto;
  if (text == "gloo") return Backend::kGloo;
  if (text == "mpi") return Backend::kMpi;
  if (text == "nccl") return Backend::kNccl;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown distributed backend '%s' (expected auto, gloo, mpi or nccl)",
      text));
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
  if (backend == Backend::kNccl) return ConnectNcclFrom(launch, options);
  if (!launch.store_path.empty()) {
    GlooOptions gloo{.rank = launch.rank,
                     .world_size = launch.world_size,
                     .store = {},
                     .timeout = options.timeout,
                     .listen_host = {},
                     .file_store_path = launch.store_path};
    gloo.store.timeout = options.timeout;
    return ConnectGloo(gloo);
  }
  absl::StatusOr<StoreOptions> store = StoreFrom(launch, options, "Gloo");
  if (!store.ok()) return store.status();
  return ConnectGloo({.rank = launch.rank,
                      .world_size = launch.world_size,
                      .store = *store,
                      .timeout = options.timeout,
                      .listen_host = {},
                      .file_store_path = {}});
}

}  // namespace kindling::distributed
