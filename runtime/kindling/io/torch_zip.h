// torch.save files: PyTorch's own checkpoint format (`.pt`, `.pth`,
// `pytorch_model.bin`), read as a table of tensors without running Python.
//
// Since PyTorch 1.6, torch.save writes a zip archive:
//
//   <name>/data.pkl        the pickled object (here: a state_dict)
//   <name>/data/<key>      one raw storage per key, little-endian, stored
//                          uncompressed and 64-byte aligned
//   <name>/byteorder, <name>/version, ...
//
// ParseTorchZip() reads the zip's directory with minizip, runs data.pkl
// through the restricted unpickler (pickle.h: it never executes anything),
// and checks that the object is a dict of string keys to tensors whose
// storages exist, are stored uncompressed (so they can be borrowed in place)
// and hold every element the tensor's offset, size and strides reach. Each
// tensor becomes a TensorInfo whose offsets are from the start of the file:
// a contiguous tensor spans exactly its elements; one that views its storage
// with other strides carries them (TensorInfo::strides); tensors viewing the
// same bytes (tied weights) are marked TensorInfo::shares_bytes.
//
//   absl::StatusOr<SafetensorsHeader> table = ParseTorchZip(bytes, path);
//
// Every error is InvalidArgument naming the file, and the key or entry. The
// legacy format (before PyTorch 1.6, a bare pickle) and TorchScript archives
// (torch.jit.save) are recognized and refused with a message saying so.
#ifndef KINDLING_IO_TORCH_ZIP_H_
#define KINDLING_IO_TORCH_ZIP_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "kindling/io/safetensors.h"

namespace kindling::io {

// LooksLikeZip() is whether `file` starts as a zip archive does (as every
// torch.save file since PyTorch 1.6); LooksLikeLegacyTorchSave() whether it
// starts as an older torch.save file does (a pickle of torch's magic number).
bool LooksLikeZip(std::span<const uint8_t> file);
bool LooksLikeLegacyTorchSave(std::span<const uint8_t> file);

// ParseTorchZip() validates a torch.save zip held in memory (usually a
// mapping) and returns its tensor table. `file_name` labels errors.
[[nodiscard]] absl::StatusOr<SafetensorsHeader> ParseTorchZip(
    std::span<const uint8_t> file, std::string_view file_name);

}  // namespace kindling::io

#endif  // KINDLING_IO_TORCH_ZIP_H_
