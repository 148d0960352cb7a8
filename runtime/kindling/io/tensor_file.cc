#include "kindling/io/tensor_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/convert.h"
#include "kindling/io/strings.h"
#include "kindling/io/torch_zip.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/storage.h"

namespace kindling::io {

SafetensorsDType ToSafetensorsDType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return SafetensorsDType::kF32;
    case DType::kF16:
      return SafetensorsDType::kF16;
    case DType::kBF16:
      return SafetensorsDType::kBF16;
    case DType::kF64:
      return SafetensorsDType::kF64;
    case DType::kI64:
      return SafetensorsDType::kI64;
    case DType::kI32:
      return SafetensorsDType::kI32;
    case DType::kU8:
      return SafetensorsDType::kU8;
    case DType::kBool:
      return SafetensorsDType::kBool;
  }
  return SafetensorsDType::kF32;
}

std::optional<DType> FromSafetensorsDType(SafetensorsDType dtype) {
  switch (dtype) {
    case SafetensorsDType::kF32:
      return DType::kF32;
    case SafetensorsDType::kF16:
      return DType::kF16;
    case SafetensorsDType::kBF16:
      return DType::kBF16;
    case SafetensorsDType::kF64:
      return DType::kF64;
    case SafetensorsDType::kI64:
      return DType::kI64;
    case SafetensorsDType::kI32:
      return DType::kI32;
    case SafetensorsDType::kU8:
      return DType::kU8;
    case SafetensorsDType::kBool:
      return DType::kBool;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<std::shared_ptr<const TensorFile>> TensorFile::Open(
    const std::string& path) {
  absl::StatusOr<std::shared_ptr<const MappedFile>> mapping =
      MappedFile::Open(path);
  if (!mapping.ok()) return mapping.status();
  const std::span<const uint8_t> bytes = (*mapping)->bytes();
  absl::StatusOr<SafetensorsHeader> header =
      LooksLikeZip(bytes) || LooksLikeLegacyTorchSave(bytes)
          ? ParseTorchZip(bytes, path)
          : ParseSafetensors(bytes, path);
  if (!header.ok()) return header.status();
  return std::shared_ptr<const TensorFile>(
      new TensorFile(*std::move(mapping), *std::move(header)));
}

namespace {

// GatherStrided() copies the elements of a tensor that views its storage
// with strides (a torch.save file's) into a contiguous row-major buffer of
// the same element type.
std::vector<uint8_t> GatherStrided(const uint8_t* source,
                                   const TensorInfo& info, size_t element) {
  const size_t count = static_cast<size_t>(info.num_elements());
  std::vector<uint8_t> packed(count * element);
  const size_t rank = info.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;  // in elements, of `index`
  for (size_t i = 0; i < count; ++i) {
    std::memcpy(packed.data() + i * element, source + offset * element,
                element);
    // Odometer step over the last dimension first.
    for (size_t d = rank; d-- > 0;) {
      offset += info.strides[d];
      if (++index[d] < info.shape[d]) break;
      offset -= info.strides[d] * index[d];
      index[d] = 0;
    }
  }
  return packed;
}

}  // namespace

absl::Status CheckConvertible(const TensorFile& file, const TensorInfo& info,
                              DType dtype) {
  if (CanConvert(info.dtype, ToSafetensorsDType(dtype))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      Cat(file.path(), ": tensor \"", info.name, "\": stored as ",
          SafetensorsDTypeName(info.dtype), ", which cannot convert to ",
          DTypeName(dtype)));
}

absl::StatusOr<TensorBase> ReadTensor(
    const std::shared_ptr<const TensorFile>& file, const TensorInfo& info,
    DType dtype, const Device& device, bool* borrowed) {
  if (borrowed != nullptr) *borrowed = false;
  const SafetensorsDType target = ToSafetensorsDType(dtype);
  KINDLING_RETURN_IF_ERROR(CheckConvertible(*file, info, dtype));
  const Shape shape{std::span<const int64_t>(info.shape)};
  const uint8_t* source = file->data(info);
  const size_t count = static_cast<size_t>(info.num_elements());
  std::vector<uint8_t> packed;
  if (!info.strides.empty() && count > 0) {
    packed = GatherStrided(source, info, SafetensorsDTypeSize(info.dtype));
    source = packed.data();
  }
  const std::optional<DType> stored = FromSafetensorsDType(info.dtype);
  const bool aligned =
      stored.has_value() &&
      reinterpret_cast<uintptr_t>(source) % DTypeSize(*stored) == 0;
  // BOOL is never borrowed: a byte other than 0 or 1 (which the format
  // allows) read as a C++ bool is undefined behavior, so BOOL is copied and
  // normalized with `!= 0` below.
  // A strided view was gathered above; bytes another tensor views too are
  // copied so that the two never alias.
  const bool borrowable = packed.empty() && !info.shares_bytes;
  if (borrowable && aligned && count > 0 &&
      info.dtype != SafetensorsDType::kBool) {
    // Zero copy: the storage views the mapped pages and keeps `file` alive.
    // The mapping is MAP_PRIVATE and writable, so in-place writes land in
    // private copy-on-write pages (shared by every handle on this storage)
    // and never reach the file.
    auto storage = Storage::Borrow(
        Device::Cpu(), const_cast<uint8_t*>(source), count * DTypeSize(*stored),
        std::shared_ptr<const void>(file), /*read_only=*/false);
    TensorBase tensor(std::move(storage), *stored, shape,
                      ContiguousStrides(shape), 0);
    if (*stored == dtype && device.is_cpu()) {
      if (borrowed != nullptr) *borrowed = true;
      return tensor;
    }
    // Convert straight from the mapping with the backend's (vectorized)
    // kernel; only the result is allocated.
    tensor = tensor.To(dtype);
    if (!device.is_cpu()) tensor = tensor.ToDevice(device);
    return tensor;
  }
  // Unaligned, BOOL, strided, shared, or a dtype Kindling has no tensors
  // of: convert element by element, with unaligned reads.
  TensorBase tensor = TensorBase::Empty(shape, dtype, Device::Cpu());
  if (count > 0)
    ConvertElements(source, info.dtype, tensor.data(), target, count);
  if (!device.is_cpu()) tensor = tensor.ToDevice(device);
  return tensor;
}

absl::Status WriteTensorData(AtomicFile& file, const TensorBase& value,
                             SafetensorsDType on_disk) {
  TensorBase host = value;
  if (!host.device().is_cpu()) host = host.ToDevice(Device::Cpu());
  host = host.Contiguous();
  const size_t count = static_cast<size_t>(host.numel());
  if (count == 0) return absl::OkStatus();
  const SafetensorsDType stored = ToSafetensorsDType(host.dtype());
  if (stored == on_disk) {
    return file.Write(host.data(), count * host.element_size());
  }
  const std::optional<DType> disk_dtype = FromSafetensorsDType(on_disk);
  if (disk_dtype.has_value()) {
    // Convert in chunks of 256K elements with the backend's kernel; each
    // chunk is a small temporary tensor.
    const int64_t chunk = int64_t{1} << 18;
    const TensorBase flat = host.Reshape(Shape{host.numel()});
    for (int64_t start = 0; start < host.numel(); start += chunk) {
      const int64_t n = std::min(chunk, host.numel() - start);
      const TensorBase converted = flat.Narrow(0, start, n).To(*disk_dtype);
      KINDLING_RETURN_IF_ERROR(
          file.Write(converted.data(), n * converted.element_size()));
    }
    return absl::OkStatus();
  }
  // A file dtype Kindling has no tensors of: convert through a 1 MiB
  // staging buffer.
  const size_t out_size = SafetensorsDTypeSize(on_disk);
  const size_t chunk = (size_t{1} << 20) / out_size;
  std::vector<uint8_t> staging(chunk * out_size);
  const auto* source = static_cast<const uint8_t*>(host.data());
  for (size_t start = 0; start < count; start += chunk) {
    const size_t n = count - start < chunk ? count - start : chunk;
    ConvertElements(source + start * host.element_size(), stored,
                    staging.data(), on_disk, n);
    KINDLING_RETURN_IF_ERROR(file.Write(staging.data(), n * out_size));
  }
  return absl::OkStatus();
}

}  // namespace kindling::io
