#include "kindling/io/torch_zip.h"

#include <minizip/unzip.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "kindling/io/pickle.h"
#include "kindling/io/strings.h"

namespace kindling::io {
namespace {

// The most entries an archive may list, and the largest data.pkl read.
constexpr uint64_t kMaxEntries = uint64_t{1} << 20;
constexpr uint64_t kMaxPickleBytes = uint64_t{1} << 30;

absl::Status Invalid(std::string_view file_name, std::string_view what) {
  return absl::InvalidArgumentError(Cat(file_name, ": ", what));
}

// MemoryStream: minizip's file functions over bytes already in memory (the
// mapping), so that entry offsets are offsets into those bytes.
struct MemoryStream {
  std::span<const uint8_t> bytes;
  uint64_t position = 0;
};

voidpf ZCALLBACK MemoryOpen(voidpf opaque, const void* /*name*/, int mode) {
  if ((mode & ZLIB_FILEFUNC_MODE_WRITE) != 0) return nullptr;
  return opaque;
}

uLong ZCALLBACK MemoryRead(voidpf /*opaque*/, voidpf stream, void* buffer,
                           uLong size) {
  auto* memory = static_cast<MemoryStream*>(stream);
  const uint64_t left = memory->bytes.size() - memory->position;
  const uint64_t n = std::min<uint64_t>(size, left);
  std::memcpy(buffer, memory->bytes.data() + memory->position, n);
  memory->position += n;
  return static_cast<uLong>(n);
}

uLong ZCALLBACK MemoryWrite(voidpf, voidpf, const void*, uLong) { return 0; }

ZPOS64_T ZCALLBACK MemoryTell(voidpf /*opaque*/, voidpf stream) {
  return static_cast<MemoryStream*>(stream)->position;
}

long ZCALLBACK MemorySeek(voidpf /*opaque*/, voidpf stream, ZPOS64_T offset,
                          int origin) {
  auto* memory = static_cast<MemoryStream*>(stream);
  const uint64_t size = memory->bytes.size();
  uint64_t base = 0;
  if (origin == ZLIB_FILEFUNC_SEEK_CUR) base = memory->position;
  if (origin == ZLIB_FILEFUNC_SEEK_END) base = size;
  if (base > size || offset > size - base) return -1;
  memory->position = base + offset;
  return 0;
}

int ZCALLBACK MemoryClose(voidpf, voidpf) { return 0; }
int ZCALLBACK MemoryError(voidpf, voidpf) { return 0; }

// ZipEntry: one member of the archive.
struct ZipEntry {
  std::string name;
  unz64_file_pos position;  // for unzGoToFilePos64
  bool stored = false;      // method 0, not encrypted
  uint64_t size = 0;        // uncompressed
  uint64_t compressed_size = 0;
  uint64_t data_offset = 0;  // of a stored entry's bytes in the file
};

// Zip: an open archive over a MemoryStream.
class Zip {
 public:
  static absl::StatusOr<Zip> Open(std::span<const uint8_t> file,
                                  std::string_view file_name);
  Zip(Zip&& other) noexcept
      : stream_(std::move(other.stream_)),
        handle_(std::exchange(other.handle_, nullptr)),
        file_name_(other.file_name_),
        entries_(std::move(other.entries_)),
        index_(std::move(other.index_)) {}
  ~Zip() {
    if (handle_ != nullptr) unzClose(handle_);
  }

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* Find(std::string_view name) const {
    auto it = index_.find(ToAbsl(name));
    return it == index_.end() ? nullptr : &entries_[it->second];
  }

  // Read() is an entry's uncompressed bytes (data.pkl, byteorder).
  absl::StatusOr<std::string> Read(const ZipEntry& entry) const;

 private:
  Zip(std::unique_ptr<MemoryStream> stream, unzFile handle,
      std::string_view file_name)
      : stream_(std::move(stream)), handle_(handle), file_name_(file_name) {}

  absl::Status List();

  std::unique_ptr<MemoryStream> stream_;
  unzFile handle_;
  std::string_view file_name_;
  std::vector<ZipEntry> entries_;
  absl::flat_hash_map<std::string, size_t> index_;
};

absl::StatusOr<Zip> Zip::Open(std::span<const uint8_t> file,
                              std::string_view file_name) {
  auto stream = std::make_unique<MemoryStream>();
  stream->bytes = file;
  zlib_filefunc64_def functions = {};
  functions.zopen64_file = MemoryOpen;
  functions.zread_file = MemoryRead;
  functions.zwrite_file = MemoryWrite;
  functions.ztell64_file = MemoryTell;
  functions.zseek64_file = MemorySeek;
  functions.zclose_file = MemoryClose;
  functions.zerror_file = MemoryError;
  functions.opaque = stream.get();
  unzFile handle = unzOpen2_64("memory", &functions);
  if (handle == nullptr) {
    return Invalid(file_name,
                   "not a readable zip archive (its central directory is "
                   "missing or damaged; a truncated file?)");
  }
  Zip zip(std::move(stream), handle, file_name);
  if (absl::Status listed = zip.List(); !listed.ok()) return listed;
  return zip;
}

absl::Status Zip::List() {
  for (int status = unzGoToFirstFile(handle_);
       status != UNZ_END_OF_LIST_OF_FILE; status = unzGoToNextFile(handle_)) {
    if (status != UNZ_OK) {
      return Invalid(file_name_, "the zip directory is damaged");
    }
    if (entries_.size() >= kMaxEntries) {
      return Invalid(file_name_, "the zip lists too many entries");
    }
    unz_file_info64 info;
    char name[1024];
    if (unzGetCurrentFileInfo64(handle_, &info, name, sizeof(name), nullptr, 0,
                                nullptr, 0) != UNZ_OK ||
        info.size_filename >= sizeof(name)) {
      return Invalid(file_name_, "a zip entry's name is damaged or too long");
    }
    ZipEntry entry;
    entry.name.assign(name, info.size_filename);
    if (unzGetFilePos64(handle_, &entry.position) != UNZ_OK) {
      return Invalid(file_name_, "the zip directory is damaged");
    }
    entry.size = info.uncompressed_size;
    entry.compressed_size = info.compressed_size;
    entry.stored = info.compression_method == 0 && (info.flag & 1) == 0;
    if (entry.stored) {
      // The local header's length is known only once it is read.
      if (unzOpenCurrentFile(handle_) != UNZ_OK) {
        return Invalid(file_name_, Cat("zip entry \"", entry.name,
                                       "\": its local header is "
                                       "damaged"));
      }
      entry.data_offset = unzGetCurrentFileZStreamPos64(handle_);
      unzCloseCurrentFile(handle_);
      const uint64_t file_size = stream_->bytes.size();
      if (entry.size != entry.compressed_size ||
          entry.data_offset > file_size ||
          entry.size > file_size - entry.data_offset) {
        return Invalid(file_name_,
                       Cat("zip entry \"", entry.name, "\" (", entry.size,
                           " bytes) runs past the end of the file "
                           "(truncated?)"));
      }
    }
    if (!index_.emplace(entry.name, entries_.size()).second) {
      return Invalid(file_name_,
                     Cat("the zip lists \"", entry.name, "\" twice"));
    }
    entries_.push_back(std::move(entry));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Zip::Read(const ZipEntry& entry) const {
  if (entry.stored) {
    return std::string(reinterpret_cast<const char*>(stream_->bytes.data()) +
                           entry.data_offset,
                       entry.size);
  }
  // Deflate expands at most ~1032:1; a size beyond that is a lie.
  if (entry.size > kMaxPickleBytes ||
      entry.size / 1032 > entry.compressed_size + 1) {
    return Invalid(file_name_, Cat("zip entry \"", entry.name,
                                   "\" claims an implausible size"));
  }
  unz64_file_pos position = entry.position;
  if (unzGoToFilePos64(handle_, &position) != UNZ_OK ||
      unzOpenCurrentFile(handle_) != UNZ_OK) {
    return Invalid(file_name_,
                   Cat("zip entry \"", entry.name, "\" is damaged"));
  }
  std::string bytes(entry.size, '\0');
  const int read =
      bytes.empty() ? 0
                    : unzReadCurrentFile(handle_, bytes.data(), bytes.size());
  const int closed = unzCloseCurrentFile(handle_);  // checks the CRC
  if (read != static_cast<int>(bytes.size()) || closed != UNZ_OK) {
    return Invalid(file_name_, Cat("zip entry \"", entry.name,
                                   "\" does not decompress to its "
                                   "size and checksum"));
  }
  return bytes;
}

std::optional<SafetensorsDType> FileDType(TorchStorageType type) {
  switch (type) {
    case TorchStorageType::kF32:
      return SafetensorsDType::kF32;
    case TorchStorageType::kF64:
      return SafetensorsDType::kF64;
    case TorchStorageType::kF16:
      return SafetensorsDType::kF16;
    case TorchStorageType::kBF16:
      return SafetensorsDType::kBF16;
    case TorchStorageType::kI64:
      return SafetensorsDType::kI64;
    case TorchStorageType::kI32:
      return SafetensorsDType::kI32;
    case TorchStorageType::kI16:
      return SafetensorsDType::kI16;
    case TorchStorageType::kI8:
      return SafetensorsDType::kI8;
    case TorchStorageType::kU8:
      return SafetensorsDType::kU8;
    case TorchStorageType::kBool:
      return SafetensorsDType::kBool;
  }
  return std::nullopt;
}

// The archive's directory ("archive/"): where its data.pkl is.
absl::StatusOr<std::string> ArchivePrefix(const Zip& zip,
                                          std::string_view file_name) {
  std::optional<std::string> prefix;
  for (const ZipEntry& entry : zip.entries()) {
    const size_t slash = entry.name.find('/');
    if (slash == std::string::npos) continue;
    const std::string_view rest =
        std::string_view(entry.name).substr(slash + 1);
    if (rest == "constants.pkl") {
      return Invalid(file_name,
                     "a TorchScript archive (torch.jit.save), not a "
                     "torch.save file; save the model's state_dict() with "
                     "torch.save");
    }
    if (rest == "data.pkl" && !prefix.has_value()) {
      prefix = entry.name.substr(0, slash + 1);
    }
  }
  if (!prefix.has_value()) {
    return Invalid(file_name,
                   "a zip archive without <name>/data.pkl, so not a "
                   "torch.save file");
  }
  return *prefix;
}

// Extent() is how many elements from its offset a view reaches, or nullopt
// on overflow. 0 for an empty tensor.
std::optional<int64_t> Extent(const TorchTensorRef& tensor) {
  int64_t extent = 1;
  for (size_t d = 0; d < tensor.size.size(); ++d) {
    if (tensor.size[d] == 0) return 0;
    int64_t step;
    if (__builtin_mul_overflow(tensor.size[d] - 1, tensor.stride[d], &step) ||
        __builtin_add_overflow(extent, step, &extent)) {
      return std::nullopt;
    }
  }
  return extent;
}

bool IsContiguous(const TorchTensorRef& tensor) {
  int64_t expected = 1;
  for (size_t d = tensor.size.size(); d-- > 0;) {
    if (tensor.size[d] == 0) return true;
    if (tensor.size[d] != 1 && tensor.stride[d] != expected) return false;
    expected *= tensor.size[d];
  }
  return true;
}

// TensorOf() checks one state_dict entry against its storage record and
// describes it.
absl::StatusOr<TensorInfo> TensorOf(const Zip& zip, const std::string& prefix,
                                    const std::string& key,
                                    const TorchTensorRef& tensor,
                                    std::string_view file_name) {
  auto error = [&](std::string_view what) {
    return Invalid(file_name, Cat("tensor \"", key, "\": ", what));
  };
  const TorchStorageRef& storage = tensor.storage;
  const std::string record = Cat(prefix, "data/", storage.key);
  const ZipEntry* entry = zip.Find(record);
  if (entry == nullptr) {
    return error(
        Cat("its storage \"", record, "\" is missing from the archive"));
  }
  if (!entry->stored) {
    return error(Cat("its storage \"", record,
                     "\" is compressed or encrypted; torch.save "
                     "stores storages uncompressed (re-save the "
                     "file with torch.save)"));
  }
  TensorInfo info;
  info.name = key;
  info.dtype = *FileDType(storage.type);
  info.shape = tensor.size;
  if (tensor.size.size() > kMaxTensorRank) {
    return error(Cat("has ", tensor.size.size(), " dimensions"));
  }
  const uint64_t element = SafetensorsDTypeSize(info.dtype);
  uint64_t storage_bytes;
  if (__builtin_mul_overflow(static_cast<uint64_t>(storage.numel), element,
                             &storage_bytes) ||
      storage_bytes > entry->size) {
    return error(Cat("its storage \"", record, "\" should hold ", storage.numel,
                     " ", TorchStorageTypeName(storage.type),
                     " elements but has ", entry->size, " bytes (truncated?)"));
  }
  const std::optional<int64_t> extent = Extent(tensor);
  if (!extent.has_value() ||
      (*extent > 0 && (tensor.offset > storage.numel ||
                       *extent > storage.numel - tensor.offset))) {
    return error(Cat("its view (offset ", tensor.offset, ") reaches past the ",
                     storage.numel, " elements of its storage"));
  }
  int64_t numel = 1;
  for (int64_t dim : tensor.size) {
    if (__builtin_mul_overflow(numel, dim, &numel)) {
      return error("its element count overflows");
    }
  }
  info.begin =
      entry->data_offset +
      (*extent > 0 ? static_cast<uint64_t>(tensor.offset) * element : 0);
  if (IsContiguous(tensor)) {
    info.end = info.begin + static_cast<uint64_t>(numel) * element;
  } else {
    info.end = info.begin + static_cast<uint64_t>(*extent) * element;
    info.strides = tensor.stride;
  }
  return info;
}

// MarkSharedBytes() marks every contiguous tensor whose bytes overlap those
// of a contiguous tensor before it (by offset).
void MarkSharedBytes(std::vector<TensorInfo>& tensors) {
  // A strided view is always copied (packed), so it claims no bytes.
  std::vector<TensorInfo*> by_begin;
  for (TensorInfo& info : tensors) {
    if (info.end > info.begin && info.strides.empty()) {
      by_begin.push_back(&info);
    }
  }
  std::stable_sort(by_begin.begin(), by_begin.end(),
                   [](const TensorInfo* a, const TensorInfo* b) {
                     return a->begin < b->begin;
                   });
  uint64_t reached = 0;
  for (TensorInfo* info : by_begin) {
    if (info->begin < reached) info->shares_bytes = true;
    reached = std::max(reached, info->end);
  }
}

// StateDictTensors() checks that `root` is a state_dict and describes its
// tensors.
absl::StatusOr<std::vector<TensorInfo>> StateDictTensors(
    const Zip& zip, const std::string& prefix, const PickleValue& root,
    std::string_view file_name) {
  using Kind = PickleValue::Kind;
  if (root.kind() != Kind::kDict) {
    return Invalid(file_name, Cat("holds a ", root.KindName(),
                                  ", not a state_dict (a dict of "
                                  "names to tensors)"));
  }
  std::vector<TensorInfo> tensors;
  for (const auto& [key, value] : root.entries()) {
    if (key.kind() != Kind::kString) {
      return Invalid(file_name, Cat("holds a dict with a ", key.KindName(),
                                    " key, not a state_dict"));
    }
    if (value.kind() != Kind::kTensor) {
      return Invalid(file_name,
                     Cat("entry \"", key.string(), "\" is a ", value.KindName(),
                         ", not a tensor, so this is not a state_dict; save "
                         "the model's state_dict() alone (for a training "
                         "checkpoint, its model entry)"));
    }
    absl::StatusOr<TensorInfo> info =
        TensorOf(zip, prefix, key.string(), value.tensor(), file_name);
    if (!info.ok()) return info.status();
    tensors.push_back(*std::move(info));
  }
  MarkSharedBytes(tensors);
  return tensors;
}

}  // namespace

bool LooksLikeZip(std::span<const uint8_t> file) {
  return file.size() >= 4 && file[0] == 'P' && file[1] == 'K' && file[2] == 3 &&
         file[3] == 4;
}

bool LooksLikeLegacyTorchSave(std::span<const uint8_t> file) {
  // PROTO 2, then LONG1 of torch's magic number 0x1950a86a20f9469cfc6c.
  static constexpr uint8_t kMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c,
                                       0xfc, 0x9c, 0x46, 0xf9, 0x20,
                                       0x6a, 0xa8, 0x50, 0x19};
  return file.size() >= sizeof(kMagic) &&
         std::memcmp(file.data(), kMagic, sizeof(kMagic)) == 0;
}

absl::StatusOr<SafetensorsHeader> ParseTorchZip(std::span<const uint8_t> file,
                                                std::string_view file_name) {
  if (!LooksLikeZip(file)) {
    if (LooksLikeLegacyTorchSave(file)) {
      return Invalid(file_name,
                     "the legacy torch.save format (before PyTorch 1.6) is "
                     "not supported; re-save it with a newer PyTorch");
    }
    return Invalid(file_name, "not a zip archive, so not a torch.save file");
  }
  absl::StatusOr<Zip> zip = Zip::Open(file, file_name);
  if (!zip.ok()) return zip.status();
  absl::StatusOr<std::string> prefix = ArchivePrefix(*zip, file_name);
  if (!prefix.ok()) return prefix.status();
  if (const ZipEntry* order = zip->Find(*prefix + "byteorder")) {
    absl::StatusOr<std::string> text = zip->Read(*order);
    if (!text.ok()) return text.status();
    if (*text != "little") {
      return Invalid(file_name, Cat("byte order \"", *text,
                                    "\"; only little is supported"));
    }
  }
  const std::string pickle_name = *prefix + "data.pkl";
  absl::StatusOr<std::string> pickle = zip->Read(*zip->Find(pickle_name));
  if (!pickle.ok()) return pickle.status();
  absl::StatusOr<PickleValue> root = Unpickle(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pickle->data()),
                               pickle->size()),
      Cat(file_name, "/", pickle_name));
  if (!root.ok()) return root.status();
  absl::StatusOr<std::vector<TensorInfo>> tensors =
      StateDictTensors(*zip, *prefix, *root, file_name);
  if (!tensors.ok()) return tensors.status();
  return SafetensorsHeader::FromTable(*std::move(tensors), file.size());
}

}  // namespace kindling::io
