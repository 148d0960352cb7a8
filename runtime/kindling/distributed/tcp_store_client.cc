// TcpStoreClient: one connection, one request at a time. The socket is
// non-blocking and every wait is a poll() against a deadline, so no call
// outlives its timeout. Get and Wait carry their timeout to the server,
// which answers DeadlineExceeded naming the missing keys; the client's own
// deadline (a grace later) only catches a server that stopped answering.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/store_protocol.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {
namespace {

// kRetryInterval: how often Connect() tries again while the server is not
// up yet.
constexpr absl::Duration kRetryInterval = absl::Milliseconds(100);
// kReplyGrace: how much longer than a Get / Wait timeout the client waits
// for the server's own DeadlineExceeded, which names the missing keys.
constexpr absl::Duration kReplyGrace = absl::Seconds(2);
// kGoodbyeTimeout bounds the destructor's goodbye.
constexpr absl::Duration kGoodbyeTimeout = absl::Seconds(1);
constexpr size_t kReadChunk = 64 << 10;

std::string Errno(int error) { return std::strerror(error); }

std::string Quoted(const std::string& key) {
  return absl::StrFormat("\"%s\"", absl::CHexEscape(key));
}

// PollMs() is the poll() timeout for what is left until `deadline`.
int PollMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  if (left >= absl::Milliseconds(INT_MAX)) return INT_MAX;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

// TimeoutMs() is a Get / Wait timeout as the frame carries it (whole
// milliseconds, at most ~49 days).
uint32_t TimeoutMs(absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return 0;
  if (timeout >= absl::Milliseconds(UINT32_MAX)) return UINT32_MAX;
  return static_cast<uint32_t>(
      absl::ToInt64Milliseconds(absl::Ceil(timeout, absl::Milliseconds(1))));
}

// WaitFor() polls `fd` for `events` until `deadline`: false on timeout.
bool WaitFor(int fd, short events, absl::Time deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, PollMs(deadline));
    if (ready > 0) return true;
    if (ready == 0 && absl::Now() >= deadline) return false;
    if (ready < 0 && errno != EINTR) return true;  // the call will tell
  }
}

// TryConnect() makes one attempt: a connected non-blocking socket.
absl::StatusOr<int> TryConnect(const StoreOptions& options,
                               absl::Time deadline) {
  KINDLING_ASSIGN_OR_RETURN(Ipv4Address address,
                            ResolveIpv4(options.host, options.port));
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket: " + Errno(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = address.address;
  addr.sin_port = address.port;
  int error = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) <
      0) {
    error = errno;
    if (error == EINPROGRESS) {
      socklen_t size = sizeof(error);
      error =
          WaitFor(fd, POLLOUT, deadline)
              ? (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size), error)
              : ETIMEDOUT;
    }
  }
  if (error != 0) {
    ::close(fd);
    return absl::UnavailableError(Errno(error));
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

class Client final : public TcpStoreClient {
 public:
  static absl::StatusOr<std::unique_ptr<TcpStoreClient>> Connect(
      const StoreOptions& options);
  ~Client() override;

  absl::Status Set(const std::string& key, const std::string& value) override;
  absl::StatusOr<std::string> Get(const std::string& key) override;
  absl::Status Wait(const std::vector<std::string>& keys,
                    absl::Duration timeout) override;
  absl::Status IdentifyAs(const std::string& name) override;

 private:
  Client(const StoreOptions& options, int fd)
      : options_(options),
        endpoint_(Endpoint(options.host, options.port)),
        fd_(fd),
        input_(MaxFrameBytes(false)) {}

  absl::Status Handshake(absl::Time deadline);
  absl::Status Authenticate(const Frame& hello, absl::Time deadline);
  // Call() sends a request and returns its kOk reply; a kError reply is its
  // status, anything else breaks the connection.
  absl::StatusOr<Frame> Call(const std::string& what,
                             const std::string& request, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Send(const std::string& what, const std::string& bytes,
                    absl::Time deadline);
  absl::StatusOr<Frame> Receive(const std::string& what, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReplyStatus(const Frame& reply) const;

  const StoreOptions options_;
  const std::string endpoint_;
  const int fd_;
  absl::Mutex mu_;
  FrameBuffer input_ ABSL_GUARDED_BY(mu_);
  // broken_: why the connection is unusable (OK while it is usable).
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<TcpStoreClient>> Client::Connect(
    const StoreOptions& options) {
  const std::string endpoint = Endpoint(options.host, options.port);
  const absl::Time deadline = absl::Now() + options.timeout;
  while (true) {
    absl::StatusOr<int> fd = TryConnect(options, deadline);
    if (fd.ok()) {
      std::unique_ptr<Client> client(new Client(options, *fd));
      // At least a second for the hello, however late the connect came.
      KINDLING_RETURN_IF_ERROR(client->Handshake(
          std::max(deadline, absl::Now() + absl::Seconds(1))));
      return std::unique_ptr<TcpStoreClient>(std::move(client));
    }
    if (absl::IsInvalidArgument(fd.status())) return fd.status();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "could not connect to the store at %s within %s: %s", endpoint,
          absl::FormatDuration(options.timeout), fd.status().message()));
    }
    absl::SleepFor(std::min(kRetryInterval, deadline - absl::Now()));
  }
}

Client::~Client() {
  {
    absl::MutexLock lock(&mu_);
    if (broken_.ok()) {
      Send("goodbye", EncodeFrame(Opcode::kGoodbye, 0, {}),
           absl::Now() + kGoodbyeTimeout)
          .IgnoreError();
    }
  }
  ::close(fd_);
}

absl::Status Client::Handshake(absl::Time deadline) {
  absl::StatusOr<Frame> hello;
  {
    absl::MutexLock lock(&mu_);
    hello = Receive("hello", deadline);
  }
  if (!hello.ok()) return hello.status();
  if (hello->opcode == Opcode::kError) return ReplyStatus(*hello);
  if (hello->opcode != Opcode::kHello) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the service at %s is not a Kindling store: it began with a %s frame",
        endpoint_, OpcodeName(static_cast<uint8_t>(hello->opcode))));
  }
  return Authenticate(*hello, deadline);
}

absl::Status Client::Authenticate(const Frame& hello, absl::Time deadline) {
  const bool required = (hello.arg & kHelloAuthRequired) != 0;
  if (required && (hello.fields.size() != 1)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the store at %s asked for authentication without a challenge",
        endpoint_));
  }
  if (required && options_.token.empty()) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the store at %s requires a token and this client has none: set "
        "KINDLING_DIST_TOKEN to the job's token",
        endpoint_));
  }
  if (!required && !options_.token.empty()) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "this client has a token (KINDLING_DIST_TOKEN) but the store at %s "
        "does not authenticate: set the token on every rank or on none",
        endpoint_));
  }
  if (!required) return absl::OkStatus();
  KINDLING_ASSIGN_OR_RETURN(std::string mac,
                            AuthMac(options_.token, hello.fields[0]));
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Frame> reply =
      Call("authentication", EncodeFrame(Opcode::kAuth, 0, {mac}), deadline);
  if (!reply.ok()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("the store at %s refused this client: wrong or missing "
                        "KINDLING_DIST_TOKEN (%s)",
                        endpoint_, reply.status().message()));
  }
  return absl::OkStatus();
}

absl::Status Client::Set(const std::string& key, const std::string& value) {
  if (key.size() > kMaxKeyBytes || value.size() > kMaxValueBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Set(%s): key of %d bytes (bound %d) or value of %d bytes (bound %d)",
        Quoted(key.substr(0, 64)), key.size(), kMaxKeyBytes, value.size(),
        kMaxValueBytes));
  }
  absl::MutexLock lock(&mu_);
  return Call(absl::StrFormat("Set(%s)", Quoted(key)),
              EncodeFrame(Opcode::kSet, 0, {key, value}),
              absl::Now() + options_.timeout)
      .status();
}

absl::StatusOr<std::string> Client::Get(const std::string& key) {
  if (key.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Get(%s...): the key is %d bytes, over its bound %d",
                        Quoted(key.substr(0, 64)), key.size(), kMaxKeyBytes));
  }
  absl::MutexLock lock(&mu_);
  KINDLING_ASSIGN_OR_RETURN(
      Frame reply,
      Call(absl::StrFormat("Get(%s)", Quoted(key)),
           EncodeFrame(Opcode::kGet, TimeoutMs(options_.timeout), {key}),
           absl::Now() + options_.timeout + kReplyGrace));
  if (reply.fields.size() != 1) {
    return absl::InternalError(
        absl::StrFormat("the store at %s answered Get(%s) without a value",
                        endpoint_, Quoted(key)));
  }
  return std::move(reply.fields[0]);
}

absl::Status Client::Wait(const std::vector<std::string>& keys,
                          absl::Duration timeout) {
  if (keys.empty()) return absl::OkStatus();
  if (keys.size() > kMaxKeysPerRequest) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Wait for %d keys: over the bound of %d per request",
                        keys.size(), kMaxKeysPerRequest));
  }
  std::string listed;
  for (const std::string& key : keys) {
    if (key.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Wait(%s...): the key is %d bytes, over its bound %d",
                          Quoted(key.substr(0, 64)), key.size(), kMaxKeyBytes));
    }
    if (listed.size() < 256) {
      absl::StrAppend(&listed, listed.empty() ? "" : ", ", Quoted(key));
    }
  }
  absl::MutexLock lock(&mu_);
  return Call(absl::StrFormat("Wait(%s)", listed),
              EncodeFrame(Opcode::kWait, TimeoutMs(timeout), keys),
              absl::Now() + timeout + kReplyGrace)
      .status();
}

absl::Status Client::IdentifyAs(const std::string& name) {
  if (name.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("IdentifyAs: the name is %d bytes, over its bound %d",
                        name.size(), kMaxKeyBytes));
  }
  absl::MutexLock lock(&mu_);
  return Call(absl::StrFormat("IdentifyAs(%s)", Quoted(name)),
              EncodeFrame(Opcode::kIdentify, 0, {name}),
              absl::Now() + options_.timeout)
      .status();
}

absl::StatusOr<Frame> Client::Call(const std::string& what,
                                   const std::string& request,
                                   absl::Time deadline) {
  if (!broken_.ok()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: the connection to the store at %s is unusable after an earlier "
        "error (%s)",
        what, endpoint_, broken_.message()));
  }
  absl::Status sent = Send(what, request, deadline);
  if (!sent.ok()) {
    broken_ = sent;
    return sent;
  }
  absl::StatusOr<Frame> reply = Receive(what, deadline);
  if (!reply.ok()) {
    broken_ = reply.status();
    return reply.status();
  }
  if (reply->opcode == Opcode::kOk) return reply;
  if (reply->opcode == Opcode::kError) return ReplyStatus(*reply);
  broken_ = absl::InternalError(absl::StrFormat(
      "%s: the store at %s answered with a %s frame", what, endpoint_,
      OpcodeName(static_cast<uint8_t>(reply->opcode))));
  return broken_;
}

absl::Status Client::Send(const std::string& what, const std::string& bytes,
                          absl::Time deadline) {
  size_t offset = 0;
  while (offset < bytes.size()) {
    const ssize_t sent =
        ::send(fd_, bytes.data() + offset, bytes.size() - offset, MSG_NOSIGNAL);
    if (sent >= 0) {
      offset += static_cast<size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return absl::UnavailableError(
          absl::StrFormat("%s: sending to the store at %s failed: %s", what,
                          endpoint_, Errno(errno)));
    }
    if (!WaitFor(fd_, POLLOUT, deadline)) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s: the store at %s took no data before the deadline", what,
          endpoint_));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Frame> Client::Receive(const std::string& what,
                                      absl::Time deadline) {
  char chunk[kReadChunk];
  while (true) {
    absl::StatusOr<std::optional<Frame>> next = input_.Next();
    if (!next.ok()) {
      return absl::DataLossError(
          absl::StrFormat("%s: the store at %s sent a bad reply: %s", what,
                          endpoint_, next.status().message()));
    }
    if (next->has_value()) return std::move(**next);
    if (!WaitFor(fd_, POLLIN, deadline)) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s: no reply from the store at %s in time", what, endpoint_));
    }
    const ssize_t got =
        ::recv(fd_, chunk, std::min(sizeof(chunk), input_.room()), 0);
    if (got > 0) {
      input_.Append(chunk, static_cast<size_t>(got));
    } else if (got == 0) {
      return absl::UnavailableError(absl::StrFormat(
          "%s: the store at %s closed the connection", what, endpoint_));
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return absl::UnavailableError(
          absl::StrFormat("%s: receiving from the store at %s failed: %s", what,
                          endpoint_, Errno(errno)));
    }
  }
}

// ReplyStatus() is a kError reply as a Status: the server's code (Unknown
// when it is not one) and its message, prefixed by where it came from.
absl::Status Client::ReplyStatus(const Frame& reply) const {
  const uint32_t code = reply.arg;
  const absl::StatusCode status_code = code >= 1 && code <= 16
                                           ? static_cast<absl::StatusCode>(code)
                                           : absl::StatusCode::kUnknown;
  const std::string message = reply.fields.empty() ? "" : reply.fields[0];
  return absl::Status(status_code,
                      absl::StrFormat("store at %s: %s", endpoint_, message));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpStoreClient>> TcpStoreClient::Connect(
    const StoreOptions& options) {
  return Client::Connect(options);
}

std::string TokenFromEnvironment() {
  const char* token = std::getenv("KINDLING_DIST_TOKEN");
  return token == nullptr ? "" : token;
}

}  // namespace kindling::distributed
