// RankDevice(): the device a data-parallel rank trains on, from what the user
// asked for (a --device flag) and where the launch put the process.
//
//   absl::StatusOr<LaunchEnvironment> launch = ReadLaunchEnvironment();
//   absl::StatusOr<Device> device = RankDevice("cuda", *launch);
//   // rank with LOCAL_RANK=3 -> cuda:3, the GPU its NCCL communicator uses
//
// "cuda" without an index means "this rank's GPU": cuda:LOCAL_RANK, the
// convention torchrun users know (one process per GPU, LOCAL_RANK picks it).
// An explicit "cuda:N" is kept as written, for every rank, and "cpu" stays
// cpu. The NCCL communicator (Connect() with backend nccl) opens on
// cuda:LOCAL_RANK too, so a model placed by RankDevice("cuda", ...) and its
// gradients are where the communicator reduces them.
#ifndef KINDLING_DISTRIBUTED_RANK_DEVICE_H_
#define KINDLING_DISTRIBUTED_RANK_DEVICE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/tensor/device.h"

namespace kindling::distributed {

// RankDevice() parses `text` as Device::Parse() does, then maps a bare
// "cuda" to cuda:launch.local_rank. A spelling Device::Parse() rejects is
// InvalidArgument, with its message.
[[nodiscard]] absl::StatusOr<Device> RankDevice(
    std::string_view text, const LaunchEnvironment& launch);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_RANK_DEVICE_H_
