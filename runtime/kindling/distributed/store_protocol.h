// The rendezvous store's wire protocol (tcp_store.h): frames, their bounds,
// an incremental parser that trusts nothing it reads, and the MAC of the
// authentication handshake. Pure code (no sockets), so the fuzzer
// (tests/distributed/store_protocol_fuzzer.cc) builds it alone.
//
// A frame is a 20-byte header, then its fields:
//
//   u32 magic (kFrameMagic)   u8 version (kProtocolVersion)   u8 opcode
//   u16 reserved (0)          u32 arg (a timeout, a status code or flags)
//   u32 field_count           u32 payload_bytes (the fields, length-prefixed)
//   field_count x { u32 length, length bytes }
//
// All integers are little-endian. Each opcode has its field count and a
// bound per field (a key, a value, a message, a 32-byte MAC), checked as
// soon as the bytes naming them arrive: an oversized length is refused
// before its payload is read, so nothing is ever allocated by a peer's word
// beyond these bounds.
#ifndef KINDLING_DISTRIBUTED_STORE_PROTOCOL_H_
#define KINDLING_DISTRIBUTED_STORE_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kindling::distributed {

// The bounds. Rendezvous values (Gloo addresses, NCCL ids) are tiny; 16 MiB
// leaves room for anything a job may want to publish once.
inline constexpr size_t kMaxKeyBytes = 4 << 10;
inline constexpr size_t kMaxValueBytes = 16 << 20;
inline constexpr size_t kMaxKeysPerRequest = 1024;
inline constexpr size_t kMaxStoredBytes = 256 << 20;
inline constexpr size_t kMaxConnections = 1024;
// kMaxMessageBytes bounds an error reply's text (the server shortens longer
// ones).
inline constexpr size_t kMaxMessageBytes = 64 << 10;
// kMaxBufferedBytes bounds the bytes read and not yet parsed over all of the
// server's connections (each is also bounded by its largest frame).
inline constexpr size_t kMaxBufferedBytes = 256 << 20;
// kMacBytes: the challenge and its HMAC-SHA256 are both 32 bytes.
inline constexpr size_t kMacBytes = 32;

inline constexpr uint32_t kFrameMagic = 0x5453444B;  // "KDST" on the wire
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kHeaderBytes = 20;
inline constexpr size_t kFieldPrefixBytes = 4;

enum class Opcode : uint8_t {
  // Client to server.
  kSet = 1,       // key, value -> kOk
  kGet = 2,       // key; arg = timeout ms -> kOk(value) or kError
  kWait = 3,      // keys (1..kMaxKeysPerRequest); arg = timeout ms -> kOk
  kIdentify = 4,  // name -> kOk
  kGoodbye = 5,   // nothing; the server closes the connection, no reply
  kAuth = 6,      // HMAC-SHA256(token, challenge) -> kOk, or kError + close
  // Server to client.
  kHello = 0x80,  // arg = kHelloAuthRequired or 0; the challenge when set
  kOk = 0x81,     // nothing, or the value of a Get
  kError = 0x82,  // arg = absl::StatusCode; the message
};

// kHelloAuthRequired: kHello's arg flag saying the challenge follows.
inline constexpr uint32_t kHelloAuthRequired = 1;

// OpcodeName() is "set", "get", ...; "opcode 0x%02x" for unknown ones.
std::string OpcodeName(uint8_t opcode);

struct Frame {
  Opcode opcode = Opcode::kOk;
  uint32_t arg = 0;
  std::vector<std::string> fields;
};

// MaxFrameBytes() is the largest well-formed frame of any opcode a client
// (requests) or a server (replies) sends: the per-connection buffer bound.
size_t MaxFrameBytes(bool requests);

// EncodeFrame() writes a frame. The caller keeps within the bounds (the
// parser on the other end refuses anything else).
std::string EncodeFrame(Opcode opcode, uint32_t arg,
                        const std::vector<std::string>& fields);

// ParsedFrame: the frame at the front of a buffer and how many bytes it took.
struct ParsedFrame {
  Frame frame;
  size_t consumed = 0;
};

// ParseFrame() parses the frame at the front of `bytes`: the frame when it
// is complete, nullopt when more bytes are needed (every byte present has
// been checked), InvalidArgument naming the field, its value and its bound
// when the bytes can never become a well-formed frame.
absl::StatusOr<std::optional<ParsedFrame>> ParseFrame(absl::string_view bytes);

// FrameBuffer: the bytes one connection has read and not yet parsed, with
// the bound a well-formed frame never needs to pass.
class FrameBuffer {
 public:
  explicit FrameBuffer(size_t capacity) : capacity_(capacity) {}

  // room() is how many more bytes Append() may take.
  size_t room() const { return capacity_ - size(); }
  size_t size() const { return bytes_.size() - start_; }
  // Append() copies `size` bytes (at most room(); the rest is dropped).
  void Append(const char* data, size_t size);
  // Next() parses the next complete frame and drops its bytes; nullopt when
  // the buffer holds only part of one; the parser's error otherwise.
  absl::StatusOr<std::optional<Frame>> Next();
  // AtEnd() is the error for the bytes left when the peer closed: OK when
  // none, InvalidArgument "truncated frame" otherwise.
  absl::Status AtEnd() const;

 private:
  size_t capacity_;
  std::string bytes_;
  // start_: the first unparsed byte (parsed bytes are dropped in bulk).
  size_t start_ = 0;
};

// AuthMac() is HMAC-SHA256(token, domain || challenge): what a client
// answers to the server's challenge. The domain string keeps the MAC from
// being reusable by any other protocol keyed by the same token.
absl::StatusOr<std::string> AuthMac(const std::string& token,
                                    const std::string& challenge);

// MacsEqual() compares two MACs in constant time (CRYPTO_memcmp).
bool MacsEqual(const std::string& a, const std::string& b);

// Ipv4Address: where a store listens, both in network byte order.
struct Ipv4Address {
  uint32_t address = 0;  // network byte order
  uint16_t port = 0;     // network byte order
};

// ResolveIpv4() resolves `host` (a dotted quad or a name, getaddrinfo) to
// its first IPv4 address; both ends use it, so they agree on what a name
// means. InvalidArgument for a port outside 0..65535, Unavailable when the
// name does not resolve.
absl::StatusOr<Ipv4Address> ResolveIpv4(const std::string& host, int port);

// Endpoint() is "host:port" for messages.
std::string Endpoint(const std::string& host, int port);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_STORE_PROTOCOL_H_
