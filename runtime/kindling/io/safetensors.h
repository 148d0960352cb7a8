// Safetensors: the checkpoint format, parsed and validated to the letter of
// its specification (https://github.com/huggingface/safetensors):
//
//   [8 bytes]  N, the header length, unsigned little-endian
//   [N bytes]  a UTF-8 JSON object, padded with spaces:
//                {"__metadata__": {"key": "value", ...},
//                 "layer.weight": {"dtype": "F32", "shape": [2, 3],
//                                  "data_offsets": [BEGIN, END]}, ...}
//   [rest]     the data section; offsets are relative to its start
//
// ParseSafetensors() checks everything before anyone reads a tensor byte:
// the header length against the file size and the 100 MB limit, the JSON
// (strict, see json.h), known dtypes, shape x dtype size == byte span (with
// overflow checks), and that the tensors tile the data section exactly:
// sorted by offset they start at 0, touch without gaps or overlaps, and the
// last ends where the file does. Every error is InvalidArgument naming the
// file, the tensor key and the problem, so a bad file can be rejected before
// a module is touched.
//
//   absl::StatusOr<SafetensorsHeader> header =
//       ParseSafetensors(bytes, "model.safetensors");
//   const TensorInfo* info = header->Find("fc.weight");
//   std::span<const uint8_t> data = bytes.subspan(
//       header->data_start() + info->begin, info->nbytes());
//
// EncodeSafetensorsHeader() writes the header for a list of tensors the way
// the reference implementation does: tensors in the order given (callers sort
// by alignment, see SortForAlignment), contiguous offsets, `__metadata__`
// first, padded with spaces to a multiple of 8 so that the data section, and
// with it every tensor, is 8-byte aligned in the file.
//
// This layer knows nothing about tensors or modules; the fuzzer builds it
// alone.
#ifndef KINDLING_IO_SAFETENSORS_H_
#define KINDLING_IO_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace kindling::io {

// kMaxHeaderBytes is the largest header the reader accepts (the reference
// implementation's limit).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// kMaxTensorRank is the most dimensions a tensor's "shape" may have.
inline constexpr size_t kMaxTensorRank = 64;

// SafetensorsDType: the element types the format names.
enum class SafetensorsDType : uint8_t {
  kBool,
  kU8,
  kI8,
  kU16,
  kI16,
  kF16,
  kBF16,
  kU32,
  kI32,
  kF32,
  kU64,
  kI64,
  kF64,
  kF8E4M3,
  kF8E5M2,
};

// SafetensorsDTypeName() is the header spelling: "F32", "BF16", "BOOL", ...
std::string_view SafetensorsDTypeName(SafetensorsDType dtype);

// ParseSafetensorsDType() reads a header spelling; nullopt when unknown.
std::optional<SafetensorsDType> ParseSafetensorsDType(std::string_view name);

// SafetensorsDTypeSize() is the size of one element in bytes.
size_t SafetensorsDTypeSize(SafetensorsDType dtype);

// TensorInfo: one tensor of the header.
struct TensorInfo {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;
  // Byte range [begin, end) in the data section.
  uint64_t begin = 0;
  uint64_t end = 0;
  // Only a torch.save file (torch_zip.h) sets these. `strides`: the
  // tensor views its storage with these element strides, starting at
  // `begin` and ending within `end` (empty: contiguous, as in safetensors).
  // `shares_bytes`: another tensor of the file views some of the same
  // bytes, so a reader copies instead of borrowing and the two never alias.
  std::vector<int64_t> strides;
  bool shares_bytes = false;

  uint64_t nbytes() const { return end - begin; }
  int64_t num_elements() const;
};

// SafetensorsHeader: a validated header.
class SafetensorsHeader {
 public:
  // tensors() in data order (ascending offsets).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // metadata() is `__metadata__` in file order (empty when absent).
  const std::vector<std::pair<std::string, std::string>>& metadata() const {
    return metadata_;
  }
  // Find() is the tensor named `name`, or nullptr.
  const TensorInfo* Find(std::string_view name) const;
  // FindMetadata() is the metadata value of `key`, or nullptr.
  const std::string* FindMetadata(std::string_view key) const;

  // header_size() is N; data_start() is 8 + N, the file offset of the data
  // section; data_size() is its length.
  uint64_t header_size() const { return header_size_; }
  uint64_t data_start() const { return data_start_; }
  uint64_t data_size() const { return data_size_; }

  // FromTable() is the header of a file in another format (a torch.save
  // zip) whose tensors the caller has validated: offsets are from the start
  // of the file (data_start() is 0, header_size() 0), and tensors may view
  // the same bytes (TensorInfo::shares_bytes).
  static SafetensorsHeader FromTable(std::vector<TensorInfo> tensors,
                                     uint64_t file_size);

 private:
  friend absl::StatusOr<SafetensorsHeader> ParseSafetensors(
      std::span<const uint8_t> file, std::string_view file_name);

  std::vector<TensorInfo> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  absl::flat_hash_map<std::string, size_t> index_;
  uint64_t header_size_ = 0;
  uint64_t data_start_ = 0;
  uint64_t data_size_ = 0;
};

// ParseSafetensors() validates a whole safetensors file held in memory
// (usually a read-only mapping) and returns its header. `file_name` only
// labels error messages.
[[nodiscard]] absl::StatusOr<SafetensorsHeader> ParseSafetensors(
    std::span<const uint8_t> file, std::string_view file_name);

// TensorSpec: a tensor to be written, before offsets are assigned.
struct TensorSpec {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;
};

// SortForAlignment() orders specs as the reference writer does: by element
// size, largest first, then by name. With an 8-aligned data section every
// tensor then starts at a multiple of its element size.
void SortForAlignment(std::vector<TensorSpec>& specs);

// EncodeSafetensorsHeader() returns the first 8 + N bytes of a file holding
// `specs` in the given order with `metadata`, and sets `*data_size` to the
// data section's length. InvalidArgument for duplicate or reserved names,
// negative dimensions, or sizes that overflow.
[[nodiscard]] absl::StatusOr<std::string> EncodeSafetensorsHeader(
    const std::vector<TensorSpec>& specs,
    const std::vector<std::pair<std::string, std::string>>& metadata,
    uint64_t* data_size);

}  // namespace kindling::io

#endif  // KINDLING_IO_SAFETENSORS_H_
