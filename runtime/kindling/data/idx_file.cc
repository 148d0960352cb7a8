#include "kindling/data/idx_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"

namespace kindling::data {
namespace {

constexpr int kHeaderMagicBytes = 4;
// zlib's read buffer; the default 8 KiB costs a call per 8 KiB of input.
constexpr unsigned kGzipBufferBytes = 256 << 10;
// The element bytes are read (and their buffer grown) in chunks of this
// size, so a corrupt header claiming terabytes fails on the missing bytes
// before it can allocate them.
constexpr int64_t kReadChunkBytes = int64_t{64} << 20;

bool IsKnownElementType(uint8_t byte) {
  switch (static_cast<IdxElementType>(byte)) {
    case IdxElementType::kU8:
    case IdxElementType::kI8:
    case IdxElementType::kI16:
    case IdxElementType::kI32:
    case IdxElementType::kF32:
    case IdxElementType::kF64:
      return true;
  }
  return false;
}

[[nodiscard]] absl::Status OpenError(int error, const std::string& path) {
  const std::string message =
      absl::StrCat(path, ": cannot open IDX file: ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// GzipInput reads the decompressed bytes of a plain or gzip file through
// zlib (which passes a file without a gzip header through unchanged).
class GzipInput {
 public:
  [[nodiscard]] static absl::StatusOr<GzipInput> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return OpenError(errno, path);
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a regular file"));
    }
    gzFile file = ::gzdopen(fd, "rb");
    if (file == nullptr) {
      ::close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": zlib could not allocate a reader"));
    }
    ::gzbuffer(file, kGzipBufferBytes);
    return GzipInput(path, file);
  }

  GzipInput(GzipInput&& other) noexcept
      : path_(std::move(other.path_)),
        file_(std::exchange(other.file_, nullptr)) {}
  GzipInput& operator=(GzipInput&&) = delete;
  ~GzipInput() {
    if (file_ != nullptr) ::gzclose_r(file_);
  }

  // Read() fills up to `size` bytes of `target` and returns how many it
  // filled: fewer only at the end of the input. A corrupt gzip stream (bad
  // data, failed checksum) is DataLoss; a gzip stream that is cut short
  // reads as an early end, with stream_cut_short() set.
  [[nodiscard]] absl::StatusOr<int64_t> Read(void* target, int64_t size) {
    int64_t filled = 0;
    while (filled < size) {
      // gzread takes an unsigned and returns an int.
      const unsigned chunk =
          static_cast<unsigned>(std::min<int64_t>(size - filled, 1 << 30));
      const int got =
          ::gzread(file_, static_cast<char*>(target) + filled, chunk);
      if (got > 0) filled += got;
      if (got < static_cast<int>(chunk)) break;
    }
    if (filled < size) {
      int error = Z_OK;
      const char* message = ::gzerror(file_, &error);
      if (error == Z_BUF_ERROR) {
        stream_cut_short_ = true;
      } else if (error != Z_OK) {
        return absl::DataLossError(
            absl::StrCat(path_, ": corrupt gzip stream: ", message));
      }
    }
    return filled;
  }

  // stream_cut_short() is true once Read() met a gzip stream that ends
  // before its end marker and checksum.
  bool stream_cut_short() const { return stream_cut_short_; }

 private:
  GzipInput(std::string path, gzFile file)
      : path_(std::move(path)), file_(file) {}

  std::string path_;
  gzFile file_;
  bool stream_cut_short_ = false;
};

uint32_t BigEndianU32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) |
         (uint32_t{bytes[2]} << 8) | uint32_t{bytes[3]};
}

// ToHostByteOrder() converts big-endian elements of `element_size` bytes in
// place.
template <class Word>
void SwapEach(std::vector<uint8_t>& bytes, Word (*swap)(Word)) {
  for (size_t at = 0; at + sizeof(Word) <= bytes.size(); at += sizeof(Word)) {
    Word word;
    std::memcpy(&word, bytes.data() + at, sizeof(Word));
    word = swap(word);
    std::memcpy(bytes.data() + at, &word, sizeof(Word));
  }
}

void ToHostByteOrder(std::vector<uint8_t>& bytes, size_t element_size) {
  if constexpr (std::endian::native == std::endian::big) return;
  switch (element_size) {
    case 2:
      return SwapEach<uint16_t>(
          bytes, [](uint16_t word) { return __builtin_bswap16(word); });
    case 4:
      return SwapEach<uint32_t>(
          bytes, [](uint32_t word) { return __builtin_bswap32(word); });
    case 8:
      return SwapEach<uint64_t>(
          bytes, [](uint64_t word) { return __builtin_bswap64(word); });
  }
}

std::string TruncationMessage(const std::string& path, const GzipInput& input,
                              const std::string& what) {
  return absl::StrCat(
      path, ": truncated: ", what,
      input.stream_cut_short() ? " (the gzip stream is cut short)" : "");
}

// ReadHeader() reads magic and dimensions into a fresh `array` (bytes left
// empty) and returns the number of element bytes that follow.
[[nodiscard]] absl::StatusOr<int64_t> ReadHeader(const std::string& path,
                                                 GzipInput& input,
                                                 IdxArray& array) {
  uint8_t magic[kHeaderMagicBytes];
  absl::StatusOr<int64_t> got = input.Read(magic, sizeof(magic));
  if (!got.ok()) return got.status();
  if (*got < kHeaderMagicBytes) {
    return absl::DataLossError(TruncationMessage(
        path, input,
        absl::StrFormat("the file ends after %d bytes, inside the 4-byte IDX "
                        "magic number",
                        *got)));
  }
  const uint32_t magic_number = BigEndianU32(magic);
  if (magic[0] != 0 || magic[1] != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: bad magic number 0x%08x: not an IDX file (its magic number "
        "starts with two zero bytes, e.g. 0x00000803 for u8 images)",
        path, magic_number));
  }
  if (!IsKnownElementType(magic[2])) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: unknown IDX element type 0x%02x in magic number 0x%08x (known: "
        "0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)",
        path, magic[2], magic_number));
  }
  const int rank = magic[3];
  if (rank < 1 || rank > kMaxIdxRank) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: IDX rank %d in magic number 0x%08x is outside 1..%d", path, rank,
        magic_number, kMaxIdxRank));
  }
  array.element_type = static_cast<IdxElementType>(magic[2]);

  uint8_t dims[4 * kMaxIdxRank];
  got = input.Read(dims, 4 * rank);
  if (!got.ok()) return got.status();
  if (*got < 4 * rank) {
    return absl::DataLossError(TruncationMessage(
        path, input,
        absl::StrFormat("the file ends inside the %d dimension sizes of its "
                        "header",
                        rank)));
  }
  int64_t data_bytes = static_cast<int64_t>(IdxElementSize(array.element_type));
  bool overflow = false;
  for (int axis = 0; axis < rank; ++axis) {
    const int64_t dim = BigEndianU32(dims + 4 * axis);
    array.shape.push_back(dim);
    overflow = overflow || __builtin_mul_overflow(data_bytes, dim, &data_bytes);
  }
  if (overflow) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: IDX shape %s of %s elements is more than 2^63 bytes", path,
        array.shape.ToString(), IdxElementTypeName(array.element_type)));
  }
  return data_bytes;
}

// ReadElements() reads exactly `data_bytes` into `array.bytes` and checks
// that nothing follows them.
[[nodiscard]] absl::Status ReadElements(const std::string& path,
                                        GzipInput& input, int64_t data_bytes,
                                        IdxArray& array) {
  std::vector<uint8_t>& bytes = array.bytes;
  bytes.reserve(std::min(data_bytes, kReadChunkBytes));
  int64_t filled = 0;
  while (filled < data_bytes) {
    const int64_t chunk = std::min(data_bytes - filled, kReadChunkBytes);
    bytes.resize(filled + chunk);
    absl::StatusOr<int64_t> got = input.Read(bytes.data() + filled, chunk);
    if (!got.ok()) return got.status();
    filled += *got;
    if (*got < chunk) {
      return absl::DataLossError(TruncationMessage(
          path, input,
          absl::StrFormat("the header describes %s %s (%d data bytes) but "
                          "the file ends after %d of them",
                          array.shape.ToString(),
                          IdxElementTypeName(array.element_type), data_bytes,
                          filled)));
    }
  }
  // Reading past the data also makes zlib check the gzip trailer (length
  // and CRC), which a stream cut inside the trailer lacks.
  uint8_t extra;
  absl::StatusOr<int64_t> got = input.Read(&extra, 1);
  if (!got.ok()) return got.status();
  if (*got > 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: more bytes follow the %d data bytes its header describes (%s "
        "%s); not an IDX file of that shape",
        path, data_bytes, array.shape.ToString(),
        IdxElementTypeName(array.element_type)));
  }
  if (input.stream_cut_short()) {
    return absl::DataLossError(TruncationMessage(
        path, input, "the gzip stream ends before its checksum"));
  }
  return absl::OkStatus();
}

template <class Narrow>
TensorBase WidenToI32(const IdxArray& array) {
  std::vector<int32_t> values(array.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    Narrow value;
    std::memcpy(&value, array.bytes.data() + i * sizeof(Narrow),
                sizeof(Narrow));
    values[i] = value;
  }
  return TensorBase::FromHost(values.data(), array.shape, DType::kI32,
                              Device::Cpu());
}

}  // namespace

size_t IdxElementSize(IdxElementType type) {
  switch (type) {
    case IdxElementType::kU8:
    case IdxElementType::kI8:
      return 1;
    case IdxElementType::kI16:
      return 2;
    case IdxElementType::kI32:
    case IdxElementType::kF32:
      return 4;
    case IdxElementType::kF64:
      return 8;
  }
  return 0;
}

std::string_view IdxElementTypeName(IdxElementType type) {
  switch (type) {
    case IdxElementType::kU8:
      return "u8";
    case IdxElementType::kI8:
      return "i8";
    case IdxElementType::kI16:
      return "i16";
    case IdxElementType::kI32:
      return "i32";
    case IdxElementType::kF32:
      return "f32";
    case IdxElementType::kF64:
      return "f64";
  }
  return "unknown";
}

uint32_t IdxArray::magic() const {
  return (static_cast<uint32_t>(element_type) << 8) |
         static_cast<uint32_t>(shape.rank());
}

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  absl::StatusOr<GzipInput> input = GzipInput::Open(path);
  if (!input.ok()) return input.status();
  IdxArray array;
  absl::StatusOr<int64_t> data_bytes = ReadHeader(path, *input, array);
  if (!data_bytes.ok()) return data_bytes.status();
  KINDLING_RETURN_IF_ERROR(ReadElements(path, *input, *data_bytes, array));
  ToHostByteOrder(array.bytes, IdxElementSize(array.element_type));
  return array;
}

TensorBase IdxArrayToTensor(const IdxArray& array) {
  DType dtype = DType::kU8;
  switch (array.element_type) {
    case IdxElementType::kI8:
      return WidenToI32<int8_t>(array);
    case IdxElementType::kI16:
      return WidenToI32<int16_t>(array);
    case IdxElementType::kU8:
      dtype = DType::kU8;
      break;
    case IdxElementType::kI32:
      dtype = DType::kI32;
      break;
    case IdxElementType::kF32:
      dtype = DType::kF32;
      break;
    case IdxElementType::kF64:
      dtype = DType::kF64;
      break;
  }
  return TensorBase::FromHost(array.bytes.data(), array.shape, dtype,
                              Device::Cpu());
}

}  // namespace kindling::data
