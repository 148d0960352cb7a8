// libFuzzer target for the rendezvous store's frame parser
// (runtime/kindling/distributed/store_protocol.h). The first input byte
// seeds how the rest is cut into pieces; the pieces go through FrameBuffer
// as a connection's reads would. Whatever the bytes, the incremental parse
// must agree with ParseFrame over the whole stream, every frame must
// re-encode to exactly the bytes it came from, and the buffer must stay
// within its bound. Build and run with tests/distributed/run_store_fuzzer.sh
// (clang, -fsanitize=fuzzer,address,undefined).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kindling/distributed/store_protocol.h"

namespace {

using kindling::distributed::EncodeFrame;
using kindling::distributed::Frame;
using kindling::distributed::FrameBuffer;
using kindling::distributed::MaxFrameBytes;
using kindling::distributed::ParsedFrame;
using kindling::distributed::ParseFrame;

bool SameFrame(const Frame& a, const Frame& b) {
  return a.opcode == b.opcode && a.arg == b.arg && a.fields == b.fields;
}

// ParseWhole() parses the stream frame after frame with the pure parser.
struct WholeParse {
  std::vector<Frame> frames;
  bool error = false;
  size_t leftover = 0;
};

WholeParse ParseWhole(const std::string& stream) {
  WholeParse whole;
  size_t offset = 0;
  while (true) {
    absl::StatusOr<std::optional<ParsedFrame>> parsed =
        ParseFrame(absl::string_view(stream).substr(offset));
    if (!parsed.ok()) {
      whole.error = true;
      return whole;
    }
    if (!parsed->has_value()) break;
    const ParsedFrame& frame = **parsed;
    const std::string encoded =
        EncodeFrame(frame.frame.opcode, frame.frame.arg, frame.frame.fields);
    if (encoded != stream.substr(offset, frame.consumed)) __builtin_trap();
    whole.frames.push_back(frame.frame);
    offset += frame.consumed;
  }
  whole.leftover = stream.size() - offset;
  return whole;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint32_t seed = data[0];
  const std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const WholeParse whole = ParseWhole(stream);

  FrameBuffer buffer(MaxFrameBytes(/*requests=*/true));
  std::vector<Frame> frames;
  bool error = false;
  size_t at = 0;
  while (at < stream.size() && !error) {
    seed = seed * 1103515245u + 12345u;
    const size_t piece = 1 + (seed >> 16) % 37;
    const size_t take = std::min(piece, stream.size() - at);
    if (take > buffer.room()) __builtin_trap();  // frames fit the bound
    buffer.Append(stream.data() + at, take);
    at += take;
    while (true) {
      absl::StatusOr<std::optional<Frame>> next = buffer.Next();
      if (!next.ok()) {
        error = true;
        break;
      }
      if (!next->has_value()) break;
      frames.push_back(**next);
    }
  }
  if (error != whole.error || frames.size() != whole.frames.size()) {
    __builtin_trap();
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!SameFrame(frames[i], whole.frames[i])) __builtin_trap();
  }
  if (!error && (buffer.size() != whole.leftover ||
                 buffer.AtEnd().ok() != (whole.leftover == 0))) {
    __builtin_trap();
  }
  return 0;
}
