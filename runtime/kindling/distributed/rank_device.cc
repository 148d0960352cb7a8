#include "kindling/distributed/rank_device.h"

#include <string_view>

#include "absl/status/statusor.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/tensor/device.h"

namespace kindling::distributed {

absl::StatusOr<Device> RankDevice(std::string_view text,
                                  const LaunchEnvironment& launch) {
  absl::StatusOr<Device> device = Device::Parse(text);
  if (!device.ok()) return device.status();
  // Only the bare spelling follows the launch: "cuda:0" is a choice.
  if (text == "cuda") return Device::Cuda(launch.local_rank);
  return *device;
}

}  // namespace kindling::distributed
