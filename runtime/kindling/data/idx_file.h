// ReadIdxFile: reads an IDX file, the format MNIST and Fashion-MNIST ship in.
//
// An IDX file is a big-endian header followed by the elements in row-major
// order, big-endian too:
//
//   bytes 0-1   zero
//   byte  2     element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32,
//               0x0E f64
//   byte  3     rank (number of dimensions)
//   then        one u32 per dimension, then the elements
//
// so MNIST's image files start with the magic number 0x00000803 (u8, rank 3:
// [N, rows, cols]) and its label files with 0x00000801 (u8, rank 1: [N]).
// The data sets are usually distributed gzip-compressed; ReadIdxFile reads
// plain and gzip files alike (zlib detects the gzip header), so nobody has
// to gunzip them first.
//
//   absl::StatusOr<kindling::data::IdxArray> labels = kindling::data::
//       ReadIdxFile("/usr/share/datasets/fashion-mnist/"
//                   "train-labels-idx1-ubyte.gz");
//   if (!labels.ok()) return labels.status();
//   labels->shape;                // [60000]
//   labels->element_type;         // IdxElementType::kU8
//   labels->bytes[0];             // 9: the first label
//   kindling::TensorBase tensor = IdxArrayToTensor(*labels);  // u8 [60000]
//
// Every malformed file is an absl::Status naming the file and the problem:
// a missing file (NotFound), a bad magic number, an unknown element type, a
// rank of 0 or above kMaxIdxRank, a size that overflows (InvalidArgument),
// fewer bytes than the header describes, trailing bytes, and a truncated or
// corrupt gzip stream (DataLoss).
#ifndef KINDLING_DATA_IDX_FILE_H_
#define KINDLING_DATA_IDX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kindling/tensor/tensor.h"

namespace kindling::data {

// IdxElementType is the element type byte of an IDX header.
enum class IdxElementType : uint8_t {
  kU8 = 0x08,
  kI8 = 0x09,
  kI16 = 0x0B,
  kI32 = 0x0C,
  kF32 = 0x0D,
  kF64 = 0x0E,
};

// kMaxIdxRank is the highest rank ReadIdxFile accepts: Kindling tensors have
// at most eight dimensions, and a larger rank byte means a corrupt header.
inline constexpr int kMaxIdxRank = 8;

// IdxElementSize() is the size of one element in bytes (1, 2, 4 or 8).
size_t IdxElementSize(IdxElementType type);

// IdxElementTypeName() is "u8", "i8", "i16", "i32", "f32" or "f64".
std::string_view IdxElementTypeName(IdxElementType type);

// IdxArray is the contents of one IDX file: element type, shape and the
// elements in row-major order, already converted to the host's byte order.
struct IdxArray {
  IdxElementType element_type = IdxElementType::kU8;
  Shape shape;
  std::vector<uint8_t> bytes;

  // magic() is the header's first four bytes as a big-endian number, e.g.
  // 0x00000803 for u8 images of rank 3.
  uint32_t magic() const;
  int64_t num_elements() const { return shape.num_elements(); }
};

// ReadIdxFile() reads a plain or gzip-compressed IDX file whole.
[[nodiscard]] absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// IdxArrayToTensor() copies `array` into a CPU tensor of the same shape. u8,
// i32, f32 and f64 keep their type; i8 and i16, which Kindling has no dtype
// for, widen to i32.
TensorBase IdxArrayToTensor(const IdxArray& array);

}  // namespace kindling::data

#endif  // KINDLING_DATA_IDX_FILE_H_
