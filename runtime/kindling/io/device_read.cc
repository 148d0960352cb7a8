#include "kindling/io/device_read.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "kindling/core/check.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/convert.h"
#include "kindling/io/strings.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/shape.h"

namespace kindling::io {

absl::StatusOr<TensorBase> ReadTensorToDevice(
    const std::shared_ptr<const TensorFile>& file, const TensorInfo& info,
    DType dtype, const Device& device, int64_t staging_bytes) {
  KINDLING_CHECK(!device.is_cpu(), "ReadTensorToDevice: \"%s\" bound for %s",
                 info.name, device.ToString());
  KINDLING_CHECK(staging_bytes > 0,
                 "ReadTensorToDevice: staging_bytes %d must be positive",
                 staging_bytes);
  const SafetensorsDType target = ToSafetensorsDType(dtype);
  KINDLING_RETURN_IF_ERROR(CheckConvertible(*file, info, dtype));
  if (!info.strides.empty()) {
    // A torch.save tensor that views its storage with strides (rare: a
    // state_dict's tensors are contiguous) is packed on the host first.
    absl::StatusOr<TensorBase> host =
        ReadTensor(file, info, dtype, Device::Cpu());
    if (!host.ok()) return host.status();
    return host->ToDevice(device);
  }
  const Shape shape{std::span<const int64_t>(info.shape)};
  TensorBase result = TensorBase::Empty(shape, dtype, device);
  const int64_t count = result.numel();
  if (count == 0) return result;

  DeviceMemory& memory = GetDeviceMemory(device);
  const auto* source = file->data(info);
  auto* destination = static_cast<uint8_t*>(result.data());
  const int64_t source_size = SafetensorsDTypeSize(info.dtype);
  const int64_t element_size = result.element_size();
  const int64_t chunk =
      std::max<int64_t>(1, staging_bytes / std::max(source_size, element_size));
  // Bytes that need no conversion go from the mapped pages to the device.
  const bool verbatim =
      info.dtype == target && info.dtype != SafetensorsDType::kBool;
  TensorBase staging;
  if (!verbatim) {
    staging =
        TensorBase::Empty(Shape{std::min(chunk, count)}, dtype, Device::Cpu());
  }
  for (int64_t start = 0; start < count; start += chunk) {
    const int64_t n = std::min(chunk, count - start);
    const uint8_t* chunk_source = source + start * source_size;
    if (!verbatim) {
      ConvertElements(chunk_source, info.dtype, staging.data(), target, n);
      chunk_source = static_cast<const uint8_t*>(staging.data());
    }
    memory.CopyHostToDevice(device, destination + start * element_size,
                            chunk_source, n * element_size);
  }
  return result;
}

}  // namespace kindling::io
