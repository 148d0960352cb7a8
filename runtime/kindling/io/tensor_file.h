// TensorFile: a mapped, validated checkpoint file -- safetensors, or a
// torch.save zip (torch_zip.h) -- and the bridge between its bytes and
// tensors.
//
// Open() maps the file, tells the format from its first bytes (a zip is a
// torch.save file, anything else must be safetensors) and runs the format's
// full validation before returning, so every TensorInfo it hands out is
// known to lie inside the mapping with a consistent size. ReadTensor() then
// makes a tensor of a requested dtype:
//   * CPU, same dtype, aligned start: the tensor *borrows* the mapped bytes.
//     Nothing is copied or counted in MemoryStats; the tensor keeps the
//     mapping alive (see module_file.h for in-place writes).
//   * otherwise: one new tensor, converted straight from the mapping
//     (convert.h), then moved to the device if it is not the CPU. A torch
//     tensor that views its storage with strides, or shares bytes with
//     another tensor (tied weights), is always copied, contiguous.
//
//   auto file = TensorFile::Open("model.safetensors");  // or "model.pt"
//   const TensorInfo* info = (*file)->header().Find("fc.weight");
//   absl::StatusOr<TensorBase> w =
//       ReadTensor(*file, *info, DType::kF32, Device::Cpu());
//
// Thread safety: a TensorFile is immutable; ReadTensor() may run
// concurrently on one file.
#ifndef KINDLING_IO_TENSOR_FILE_H_
#define KINDLING_IO_TENSOR_FILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/mapped_file.h"
#include "kindling/io/safetensors.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::io {

// ToSafetensorsDType() is the file dtype of a Kindling dtype (all have one).
SafetensorsDType ToSafetensorsDType(DType dtype);

// FromSafetensorsDType() is the Kindling dtype of a file dtype, or nullopt
// for those Kindling has no tensors of (I8, U16, F8_*, ...).
std::optional<DType> FromSafetensorsDType(SafetensorsDType dtype);

class TensorFile {
 public:
  // Open() maps and validates `path` (safetensors or torch.save). Errors
  // name the path (and the key).
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<const TensorFile>> Open(
      const std::string& path);

  const SafetensorsHeader& header() const { return header_; }
  const std::string& path() const { return mapping_->path(); }
  uint64_t file_size() const { return mapping_->bytes().size(); }

  // data() is the first byte of `info`'s elements in the mapping.
  const uint8_t* data(const TensorInfo& info) const {
    return mapping_->bytes().data() + header_.data_start() + info.begin;
  }

 private:
  TensorFile(std::shared_ptr<const MappedFile> mapping,
             SafetensorsHeader header)
      : mapping_(std::move(mapping)), header_(std::move(header)) {}

  std::shared_ptr<const MappedFile> mapping_;
  SafetensorsHeader header_;
};

// CheckConvertible() is OK when `info`'s stored dtype converts to `dtype`,
// else InvalidArgument naming the file and the key.
[[nodiscard]] absl::Status CheckConvertible(const TensorFile& file,
                                            const TensorInfo& info,
                                            DType dtype);

// ReadTensor() returns `info`'s elements as a contiguous tensor of `dtype`
// on `device`, borrowing the mapping when it can (see above); `*borrowed`
// (if given) says whether it did. InvalidArgument naming the file and key
// when the stored dtype cannot convert to `dtype`.
[[nodiscard]] absl::StatusOr<TensorBase> ReadTensor(
    const std::shared_ptr<const TensorFile>& file, const TensorInfo& info,
    DType dtype, const Device& device, bool* borrowed = nullptr);

// WriteTensorData() appends `value`'s elements, row-major, as `on_disk`
// elements. Converts through a small staging buffer, so the only extra
// memory is a contiguous CPU copy when `value` is strided or on another
// device. REQUIRES: CanConvert(value's dtype, on_disk).
[[nodiscard]] absl::Status WriteTensorData(AtomicFile& file,
                                           const TensorBase& value,
                                           SafetensorsDType on_disk);

}  // namespace kindling::io

#endif  // KINDLING_IO_TENSOR_FILE_H_
