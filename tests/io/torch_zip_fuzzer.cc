// libFuzzer target for the torch.save reader: any bytes, read as a whole
// file (zip + restricted unpickler) and as a bare data.pkl, must either be
// rejected with a Status or yield tensors that lie inside the file. Build and
// run with tests/io/run_fuzzer.sh (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <span>

#include "kindling/io/pickle.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/torch_zip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kindling::io;
  const std::span<const uint8_t> bytes(data, size);
  absl::StatusOr<SafetensorsHeader> table = ParseTorchZip(bytes, "fuzz");
  if (table.ok()) {
    for (const TensorInfo& info : table->tensors()) {
      if (info.begin > info.end || info.end > size) __builtin_trap();
      if (!info.strides.empty() && info.strides.size() != info.shape.size()) {
        __builtin_trap();
      }
      const uint64_t packed = static_cast<uint64_t>(info.num_elements()) *
                              SafetensorsDTypeSize(info.dtype);
      if (info.strides.empty() && packed != info.nbytes()) __builtin_trap();
      if (table->Find(info.name) != &info) __builtin_trap();
    }
  }
  // The unpickler alone, on the raw bytes: rejecting them is a valid
  // outcome; only a crash or a sanitizer report is a finding.
  Unpickle(bytes, "fuzz").status().IgnoreError();
  return 0;
}
