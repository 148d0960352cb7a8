// Kindling's side of the interop check against the reference safetensors
// package (tests/io/safetensors_reference_check.py, run by .ci/run):
//
//   safetensors_interop_tool write PATH   writes a file with Kindling's
//       writer (EncodeSafetensorsHeader + WriteTensorData, what SaveModule
//       uses): one tensor of every dtype Kindling has, an empty and a rank-0
//       tensor, and `__metadata__`; prints what it wrote.
//   safetensors_interop_tool dump PATH    opens a file with Kindling's reader
//       (TensorFile::Open + ReadTensor in the stored dtype) and prints
//       every tensor and metadata entry.
//
// Output lines, names and values hex-encoded so that any byte survives:
//   tensor <hex name> <DTYPE> <dims, comma-separated, "-" for rank 0> <hex
//   bytes> metadata <hex key> <hex value>
// Exit status 1 with the error on stderr when Kindling refuses a file.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/io/atomic_file.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::io {
namespace {

std::string Hex(const void* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::string hex;
  hex.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex.empty() ? "-" : hex;
}

std::string Hex(std::string_view text) { return Hex(text.data(), text.size()); }

std::string Dims(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "-";
  std::string dims;
  for (int64_t dim : shape) {
    if (!dims.empty()) dims += ",";
    dims += std::to_string(dim);
  }
  return dims;
}

void PrintTensor(std::string_view name, SafetensorsDType dtype,
                 const std::vector<int64_t>& shape, const void* data,
                 size_t size) {
  std::printf("tensor %s %s %s %s\n", Hex(name).c_str(),
              std::string(SafetensorsDTypeName(dtype)).c_str(),
              Dims(shape).c_str(), Hex(data, size).c_str());
}

// A tensor to write: its name, shape, dtype and element values as bytes.
struct Sample {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

template <class T>
std::string BytesOf(std::initializer_list<T> values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), std::data(values), bytes.size());
  return bytes;
}

// Every dtype Kindling has, with edge values (extremes, denormals, signs),
// plus an empty and a rank-0 tensor.
std::vector<Sample> Samples() {
  return {
      {"f32",
       DType::kF32,
       {2, 3},
       BytesOf<float>({-1.875f, -1.125f, -0.375f, 0.375f, 3.4e38f, 1e-45f})},
      {"f64", DType::kF64, {3}, BytesOf<double>({1.0 / 3, -2.5e300, 1e-310})},
      // 1.0, -2.5, 65504 (the largest half), 2^-24 (the smallest denormal)
      {"f16",
       DType::kF16,
       {2, 2},
       BytesOf<uint16_t>({0x3C00, 0xC100, 0x7BFF, 0x0001})},
      // 1.0, -2.5, the largest bf16, the smallest denormal
      {"bf16",
       DType::kBF16,
       {4},
       BytesOf<uint16_t>({0x3F80, 0xC020, 0x7F7F, 0x0001})},
      {"i64",
       DType::kI64,
       {2, 2},
       BytesOf<int64_t>({-1, int64_t{1} << 62, INT64_MIN, 7})},
      {"i32", DType::kI32, {3}, BytesOf<int32_t>({INT32_MIN, 0, 123456})},
      {"u8", DType::kU8, {5}, BytesOf<uint8_t>({0, 1, 127, 128, 255})},
      {"bool", DType::kBool, {4}, BytesOf<uint8_t>({1, 0, 0, 1})},
      {"empty", DType::kF32, {0, 3}, ""},
      {"scalar", DType::kF32, {}, BytesOf<float>({3.25f})},
  };
}

absl::Status Write(const std::string& path) {
  const std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"},
      {"kindling_interop", "every dtype"},
      {"unicode", "h\xc3\xa9llo \xe2\x9c\x93"},
  };
  std::vector<Sample> samples = Samples();
  std::vector<TensorSpec> specs;
  for (const Sample& sample : samples) {
    specs.push_back(
        {sample.name, ToSafetensorsDType(sample.dtype), sample.shape});
  }
  SortForAlignment(specs);
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header =
      EncodeSafetensorsHeader(specs, metadata, &data_size);
  if (!header.ok()) return header.status();
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  if (absl::Status status = file->Write(*header); !status.ok()) return status;
  for (const TensorSpec& spec : specs) {
    for (const Sample& sample : samples) {
      if (sample.name != spec.name) continue;
      TensorBase value = TensorBase::Empty(Shape(std::span(sample.shape)),
                                           sample.dtype, Device::Cpu());
      if (!sample.bytes.empty()) {
        std::memcpy(value.data(), sample.bytes.data(), sample.bytes.size());
      }
      if (absl::Status status = WriteTensorData(*file, value, spec.dtype);
          !status.ok()) {
        return status;
      }
      PrintTensor(sample.name, spec.dtype, sample.shape, sample.bytes.data(),
                  sample.bytes.size());
    }
  }
  for (const auto& [key, value] : metadata) {
    std::printf("metadata %s %s\n", Hex(key).c_str(), Hex(value).c_str());
  }
  return file->Commit();
}

absl::Status Dump(const std::string& path) {
  absl::StatusOr<std::shared_ptr<const TensorFile>> file =
      TensorFile::Open(path);
  if (!file.ok()) return file.status();
  for (const TensorInfo& info : (*file)->header().tensors()) {
    const std::optional<DType> dtype = FromSafetensorsDType(info.dtype);
    if (!dtype.has_value()) {
      return absl::InvalidArgumentError(
          path + ": " + info.name + ": Kindling has no tensors of dtype " +
          std::string(SafetensorsDTypeName(info.dtype)));
    }
    absl::StatusOr<TensorBase> value =
        ReadTensor(*file, info, *dtype, Device::Cpu());
    if (!value.ok()) return value.status();
    PrintTensor(info.name, info.dtype, info.shape,
                value->numel() > 0 ? value->data() : nullptr, info.nbytes());
  }
  for (const auto& [key, value] : (*file)->header().metadata()) {
    std::printf("metadata %s %s\n", Hex(key).c_str(), Hex(value).c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace kindling::io

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "write") != 0 &&
                    std::strcmp(argv[1], "dump") != 0)) {
    std::fprintf(stderr, "usage: %s write|dump PATH\n", argv[0]);
    return 2;
  }
  const absl::Status status = std::strcmp(argv[1], "write") == 0
                                  ? kindling::io::Write(argv[2])
                                  : kindling::io::Dump(argv[2]);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
