// ReadTensorToDevice(): one checkpoint tensor from a mapped safetensors file
// straight into device memory, through a bounded host staging buffer.
//
// Loading a model onto a GPU must not build the model on the host first: a
// 7 GB checkpoint read into host tensors and then copied would need 7 GB (or,
// tensor by tensor, the largest tensor twice) of host memory beside the page
// cache. Here the device tensor is allocated first and filled chunk by chunk:
//   * same dtype on disk and on the device (BOOL excepted): each chunk is
//     copied from the mapped pages to the device as it is, with no host
//     buffer at all;
//   * otherwise (an f16 file into f32 parameters, or BOOL's `!= 0`): each
//     chunk is converted (convert.h, the bits Tensor::to gives) into one
//     host staging tensor of at most `staging_bytes`, then copied.
// So the host memory a load allocates is one staging chunk, whatever the
// model's size; the staging tensor is an ordinary CPU tensor, counted in
// MemoryStats, which is how the tests and load_bench measure that peak.
//
//   absl::StatusOr<TensorBase> w = io::ReadTensorToDevice(
//       file, *info, DType::kF32, Device::Cuda(0), /*staging_bytes=*/8 << 20);
//
// LoadModule() (module_file.h) calls it for every parameter of a module that
// lives on a device, with LoadOptions::device_staging_bytes.
//
// The staging buffer is reused as soon as DeviceMemory::CopyHostToDevice()
// returns, which its contract allows (the host bytes are consumed by then). A
// pinned staging buffer, when DeviceMemory offers one, drops in here.
#ifndef KINDLING_IO_DEVICE_READ_H_
#define KINDLING_IO_DEVICE_READ_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::io {

// ReadTensorToDevice() returns `info`'s elements as a new contiguous tensor
// of `dtype` on `device`, read through at most `staging_bytes` of host
// memory (at least one element). InvalidArgument naming the file and key
// when the stored dtype cannot convert to `dtype`.
// REQUIRES: !device.is_cpu() (the CPU path borrows the mapping instead:
// ReadTensor()); staging_bytes > 0.
[[nodiscard]] absl::StatusOr<TensorBase> ReadTensorToDevice(
    const std::shared_ptr<const TensorFile>& file, const TensorInfo& info,
    DType dtype, const Device& device, int64_t staging_bytes);

}  // namespace kindling::io

#endif  // KINDLING_IO_DEVICE_READ_H_
