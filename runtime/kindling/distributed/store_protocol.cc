#include "kindling/distributed/store_protocol.h"

#include <netdb.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace kindling::distributed {
namespace {

// OpcodeSpec: the shape of one opcode's fields. Field 0 and the others may
// have different bounds (a set's key and value); min_field_bytes makes the
// MAC and the challenge exactly kMacBytes.
struct OpcodeSpec {
  uint32_t min_fields;
  uint32_t max_fields;
  size_t first_field_bound;
  size_t other_field_bound;
  size_t min_field_bytes;
  const char* first_field_name;
  const char* other_field_name;
};

const OpcodeSpec* SpecOf(uint8_t opcode) {
  static constexpr OpcodeSpec kSet{2, 2,     kMaxKeyBytes, kMaxValueBytes,
                                   0, "key", "value"};
  static constexpr OpcodeSpec kGet{1, 1, kMaxKeyBytes, 0, 0, "key", ""};
  static constexpr OpcodeSpec kWait{
      1, kMaxKeysPerRequest, kMaxKeyBytes, kMaxKeyBytes, 0, "key", "key"};
  static constexpr OpcodeSpec kIdentify{1, 1, kMaxKeyBytes, 0, 0, "name", ""};
  static constexpr OpcodeSpec kGoodbye{0, 0, 0, 0, 0, "", ""};
  static constexpr OpcodeSpec kAuth{1, 1, kMacBytes, 0, kMacBytes, "mac", ""};
  static constexpr OpcodeSpec kHello{0,         1,           kMacBytes, 0,
                                     kMacBytes, "challenge", ""};
  static constexpr OpcodeSpec kOk{0, 1, kMaxValueBytes, 0, 0, "value", ""};
  static constexpr OpcodeSpec kError{1,         1, kMaxMessageBytes, 0, 0,
                                     "message", ""};
  switch (static_cast<Opcode>(opcode)) {
    case Opcode::kSet:
      return &kSet;
    case Opcode::kGet:
      return &kGet;
    case Opcode::kWait:
      return &kWait;
    case Opcode::kIdentify:
      return &kIdentify;
    case Opcode::kGoodbye:
      return &kGoodbye;
    case Opcode::kAuth:
      return &kAuth;
    case Opcode::kHello:
      return &kHello;
    case Opcode::kOk:
      return &kOk;
    case Opcode::kError:
      return &kError;
  }
  return nullptr;
}

size_t MaxPayloadBytes(const OpcodeSpec& spec) {
  if (spec.max_fields == 0) return 0;
  return spec.max_fields * kFieldPrefixBytes + spec.first_field_bound +
         (spec.max_fields - 1) * spec.other_field_bound;
}

uint32_t ReadU32(absl::string_view bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void AppendU32(std::string& out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

absl::Status Malformed(const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("malformed store frame: %s", what));
}

// CheckHeaderPrefix() checks the header bytes present so far, so that
// garbage is refused at its first bytes rather than after 20 of them.
absl::Status CheckHeaderPrefix(absl::string_view bytes) {
  std::string magic;
  AppendU32(magic, kFrameMagic);
  const size_t magic_present = std::min<size_t>(bytes.size(), 4);
  if (bytes.substr(0, magic_present) != magic.substr(0, magic_present)) {
    return Malformed("bad magic (not a Kindling store frame)");
  }
  if (bytes.size() > 4 && static_cast<uint8_t>(bytes[4]) != kProtocolVersion) {
    return Malformed(
        absl::StrFormat("version is %d, this store speaks version %d",
                        static_cast<uint8_t>(bytes[4]), kProtocolVersion));
  }
  if (bytes.size() > 5 && SpecOf(static_cast<uint8_t>(bytes[5])) == nullptr) {
    return Malformed(absl::StrFormat(
        "unknown %s", OpcodeName(static_cast<uint8_t>(bytes[5]))));
  }
  if ((bytes.size() > 6 && bytes[6] != 0) ||
      (bytes.size() > 7 && bytes[7] != 0)) {
    return Malformed("reserved bytes 6..7 are not zero");
  }
  return absl::OkStatus();
}

// CheckCounts() checks field_count and payload_bytes against the opcode's
// bounds, before any payload byte is buffered for them.
absl::Status CheckCounts(const OpcodeSpec& spec, const std::string& name,
                         uint32_t field_count, uint32_t payload_bytes) {
  if (field_count < spec.min_fields || field_count > spec.max_fields) {
    return Malformed(absl::StrFormat(
        "field_count is %d for a %s frame, which takes %d to %d fields",
        field_count, name, spec.min_fields, spec.max_fields));
  }
  const size_t bound = MaxPayloadBytes(spec);
  if (payload_bytes > bound) {
    return Malformed(
        absl::StrFormat("payload_bytes is %d for a %s frame, over its bound %d",
                        payload_bytes, name, bound));
  }
  if (payload_bytes < static_cast<uint64_t>(field_count) * kFieldPrefixBytes) {
    return Malformed(absl::StrFormat(
        "payload_bytes is %d, too few for %d length-prefixed fields",
        payload_bytes, field_count));
  }
  return absl::OkStatus();
}

absl::Status CheckFieldLength(const OpcodeSpec& spec, const std::string& name,
                              uint32_t index, uint32_t length) {
  const size_t bound =
      index == 0 ? spec.first_field_bound : spec.other_field_bound;
  const char* role = index == 0 ? spec.first_field_name : spec.other_field_name;
  if (length > bound) {
    return Malformed(absl::StrFormat(
        "field %d (%s) of a %s frame is %d bytes, over its bound %d", index,
        role, name, length, bound));
  }
  if (length < spec.min_field_bytes) {
    return Malformed(absl::StrFormat(
        "field %d (%s) of a %s frame is %d bytes, it must be %d", index, role,
        name, length, spec.min_field_bytes));
  }
  return absl::OkStatus();
}

// FieldWalk: how far the length prefixes present so far reach.
struct FieldWalk {
  uint32_t fields_seen = 0;
  size_t end = kHeaderBytes;  // the byte after the last field seen
};

// WalkFields() checks every length prefix present in `bytes`, and that the
// fields stay inside payload_bytes.
absl::StatusOr<FieldWalk> WalkFields(absl::string_view bytes,
                                     const OpcodeSpec& spec,
                                     const std::string& name,
                                     uint32_t field_count, size_t frame_end) {
  FieldWalk walk;
  while (walk.fields_seen < field_count &&
         walk.end + kFieldPrefixBytes <= bytes.size()) {
    const uint32_t length = ReadU32(bytes, walk.end);
    absl::Status status =
        CheckFieldLength(spec, name, walk.fields_seen, length);
    if (!status.ok()) return status;
    const size_t next = walk.end + kFieldPrefixBytes + length;
    if (next > frame_end) {
      return Malformed(absl::StrFormat(
          "field %d of a %s frame (%d bytes) runs past payload_bytes (%d)",
          walk.fields_seen, name, length, frame_end - kHeaderBytes));
    }
    walk.end = next;
    ++walk.fields_seen;
  }
  if (walk.fields_seen == field_count && walk.end != frame_end) {
    return Malformed(absl::StrFormat(
        "the %d fields of a %s frame take %d bytes, payload_bytes says %d",
        field_count, name, walk.end - kHeaderBytes, frame_end - kHeaderBytes));
  }
  return walk;
}

Frame ExtractFrame(absl::string_view bytes, uint32_t field_count) {
  Frame frame;
  frame.opcode = static_cast<Opcode>(static_cast<uint8_t>(bytes[5]));
  frame.arg = ReadU32(bytes, 8);
  frame.fields.reserve(field_count);
  size_t offset = kHeaderBytes;
  for (uint32_t i = 0; i < field_count; ++i) {
    const uint32_t length = ReadU32(bytes, offset);
    frame.fields.emplace_back(bytes.substr(offset + kFieldPrefixBytes, length));
    offset += kFieldPrefixBytes + length;
  }
  return frame;
}

}  // namespace

std::string OpcodeName(uint8_t opcode) {
  switch (opcode) {
    case static_cast<uint8_t>(Opcode::kSet):
      return "set";
    case static_cast<uint8_t>(Opcode::kGet):
      return "get";
    case static_cast<uint8_t>(Opcode::kWait):
      return "wait";
    case static_cast<uint8_t>(Opcode::kIdentify):
      return "identify";
    case static_cast<uint8_t>(Opcode::kGoodbye):
      return "goodbye";
    case static_cast<uint8_t>(Opcode::kAuth):
      return "auth";
    case static_cast<uint8_t>(Opcode::kHello):
      return "hello";
    case static_cast<uint8_t>(Opcode::kOk):
      return "ok";
    case static_cast<uint8_t>(Opcode::kError):
      return "error";
    default:
      return absl::StrFormat("opcode 0x%02x", opcode);
  }
}

size_t MaxFrameBytes(bool requests) {
  const Opcode request_opcodes[] = {Opcode::kSet,     Opcode::kGet,
                                    Opcode::kWait,    Opcode::kIdentify,
                                    Opcode::kGoodbye, Opcode::kAuth};
  const Opcode reply_opcodes[] = {Opcode::kHello, Opcode::kOk, Opcode::kError};
  size_t largest = 0;
  auto consider = [&largest](Opcode opcode) {
    largest = std::max(largest,
                       MaxPayloadBytes(*SpecOf(static_cast<uint8_t>(opcode))));
  };
  if (requests) {
    for (Opcode opcode : request_opcodes) consider(opcode);
  } else {
    for (Opcode opcode : reply_opcodes) consider(opcode);
  }
  return kHeaderBytes + largest;
}

std::string EncodeFrame(Opcode opcode, uint32_t arg,
                        const std::vector<std::string>& fields) {
  size_t payload = 0;
  for (const std::string& field : fields) {
    payload += kFieldPrefixBytes + field.size();
  }
  std::string out;
  out.reserve(kHeaderBytes + payload);
  AppendU32(out, kFrameMagic);
  out.push_back(static_cast<char>(kProtocolVersion));
  out.push_back(static_cast<char>(opcode));
  out.append(2, '\0');
  AppendU32(out, arg);
  AppendU32(out, static_cast<uint32_t>(fields.size()));
  AppendU32(out, static_cast<uint32_t>(payload));
  for (const std::string& field : fields) {
    AppendU32(out, static_cast<uint32_t>(field.size()));
    out.append(field);
  }
  return out;
}

absl::StatusOr<std::optional<ParsedFrame>> ParseFrame(absl::string_view bytes) {
  absl::Status status = CheckHeaderPrefix(bytes);
  if (!status.ok()) return status;
  if (bytes.size() < kHeaderBytes) return std::nullopt;
  const uint8_t opcode = static_cast<uint8_t>(bytes[5]);
  const OpcodeSpec& spec = *SpecOf(opcode);
  const std::string name = OpcodeName(opcode);
  const uint32_t field_count = ReadU32(bytes, 12);
  const uint32_t payload_bytes = ReadU32(bytes, 16);
  status = CheckCounts(spec, name, field_count, payload_bytes);
  if (!status.ok()) return status;
  const size_t frame_end = kHeaderBytes + payload_bytes;
  absl::StatusOr<FieldWalk> walk =
      WalkFields(bytes, spec, name, field_count, frame_end);
  if (!walk.ok()) return walk.status();
  if (walk->fields_seen < field_count || bytes.size() < frame_end) {
    return std::nullopt;
  }
  return ParsedFrame{ExtractFrame(bytes, field_count), frame_end};
}

void FrameBuffer::Append(const char* data, size_t size) {
  if (start_ > 0) {
    bytes_.erase(0, start_);
    start_ = 0;
  }
  bytes_.append(data, std::min(size, room()));
}

absl::StatusOr<std::optional<Frame>> FrameBuffer::Next() {
  absl::StatusOr<std::optional<ParsedFrame>> parsed =
      ParseFrame(absl::string_view(bytes_).substr(start_));
  if (!parsed.ok()) return parsed.status();
  if (!parsed->has_value()) return std::nullopt;
  start_ += (*parsed)->consumed;
  if (start_ == bytes_.size()) {
    // Give a large frame's memory back rather than keep it per connection.
    if (bytes_.capacity() > (1 << 20)) {
      std::string().swap(bytes_);
    } else {
      bytes_.clear();
    }
    start_ = 0;
  }
  return std::move((*parsed)->frame);
}

absl::Status FrameBuffer::AtEnd() const {
  if (size() == 0) return absl::OkStatus();
  return Malformed(absl::StrFormat(
      "truncated frame: the connection ended %d bytes into a frame", size()));
}

absl::StatusOr<std::string> AuthMac(const std::string& token,
                                    const std::string& challenge) {
  static constexpr char kDomain[] = "kindling-store-auth-v1";
  const std::string message = kDomain + challenge;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), mac, &mac_size) == nullptr ||
      mac_size != kMacBytes) {
    return absl::InternalError("HMAC-SHA256 failed (OpenSSL)");
  }
  return std::string(reinterpret_cast<const char*>(mac), mac_size);
}

bool MacsEqual(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<Ipv4Address> ResolveIpv4(const std::string& host, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrFormat("store port %d is outside 0..65535", port));
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (error != 0 || found == nullptr) {
    return absl::UnavailableError(
        absl::StrFormat("cannot resolve the store host \"%s\" (IPv4): %s", host,
                        ::gai_strerror(error)));
  }
  Ipv4Address address;
  address.address =
      reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  address.port = htons(static_cast<uint16_t>(port));
  ::freeaddrinfo(found);
  return address;
}

std::string Endpoint(const std::string& host, int port) {
  return absl::StrFormat("%s:%d", host, port);
}

}  // namespace kindling::distributed
