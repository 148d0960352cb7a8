// libFuzzer target for the safetensors reader: any bytes must either be
// rejected with a Status or yield a header whose every tensor lies inside the
// data section with a consistent size. Build and run with
// tests/io/run_fuzzer.sh (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "kindling/io/json.h"
#include "kindling/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kindling::io;
  absl::StatusOr<SafetensorsHeader> header =
      ParseSafetensors(std::span<const uint8_t>(data, size), "fuzz");
  if (header.ok()) {
    uint64_t covered = 0;
    for (const TensorInfo& info : header->tensors()) {
      if (info.begin != covered || info.end > header->data_size()) {
        __builtin_trap();
      }
      if (static_cast<uint64_t>(info.num_elements()) *
              SafetensorsDTypeSize(info.dtype) !=
          info.nbytes()) {
        __builtin_trap();
      }
      if (header->Find(info.name) != &info) __builtin_trap();
      covered = info.end;
    }
    if (covered != header->data_size()) __builtin_trap();
    if (header->data_start() + header->data_size() != size) __builtin_trap();
  }
  // The JSON reader alone, on the raw bytes. Rejecting them is a valid
  // outcome; only a crash or a sanitizer report is a finding.
  ParseJson(std::string_view(reinterpret_cast<const char*>(data), size))
      .IgnoreError();
  return 0;
}
