// Putting a training batch where the model is.
//
// Data loaders build batches on the CPU (decoding, shuffling and gathering
// are host work). A model that lives on cuda:N needs its inputs there too, so
// the Trainer moves each batch to the model's device right before the step,
// and EvaluateAccuracy() each test batch; a model on the CPU costs nothing
// (the move of a tensor to its own device is the tensor itself).
//
//   absl::StatusOr<Device> device = train::ModelDevice(model);
//   data::Batch on_device = train::BatchOnDevice(*batch, *device);
#ifndef KINDLING_TRAIN_BATCH_DEVICE_H_
#define KINDLING_TRAIN_BATCH_DEVICE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "kindling/data/data_loader.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/visit.h"
#include "kindling/tensor/device.h"

namespace kindling::train {

// ModelDevice() is the one device `model`'s parameters live (or, lazy, will
// live) on; the CPU for a model without parameters. InvalidArgument, listing
// them, when they are spread over several devices: a batch cannot follow.
template <Module M>
[[nodiscard]] absl::StatusOr<Device> ModelDevice(const M& model) {
  const std::vector<Device> devices = Devices<Device>(model);
  if (devices.empty()) return Device::Cpu();
  if (devices.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model's parameters live on several devices (",
        absl::StrJoin(devices, ", ",
                      [](std::string* out, const Device& device) {
                        out->append(device.ToString());
                      }),
        "); the trainer moves each batch to the model's one device: move the "
        "model with ToDevice() first"));
  }
  return devices.front();
}

// BatchOnDevice() is `batch` with images and labels on `device` (the same
// tensors when they are already there).
inline data::Batch BatchOnDevice(const data::Batch& batch,
                                 const Device& device) {
  data::Batch moved = batch;
  moved.images = batch.images.to_device(device);
  moved.labels = batch.labels.to_device(device);
  return moved;
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_BATCH_DEVICE_H_
