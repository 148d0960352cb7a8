// TcpStoreServer: one thread, one poll() over non-blocking sockets. Every
// connection is a small state machine (authenticating, ready, waiting on
// keys, closed) with a bounded input buffer; a connection that waits or has
// a large reply queued is not parsed further, so each holds at most one
// pending request and one large reply.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/store_protocol.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {
namespace {

constexpr size_t kReadChunk = 64 << 10;
// kOutputPauseBytes: a connection with more reply bytes queued than this is
// not parsed further until its peer reads them (a client pipelining Gets of
// a large value without reading cannot grow the server's memory).
constexpr size_t kOutputPauseBytes = 64 << 10;
// kAcceptPause: how long to stop accepting when the process is out of file
// descriptors (the listening socket stays readable; polling it would spin).
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);
// kListenBacklog: connections the kernel queues before accept().
constexpr int kListenBacklog = 256;

std::string Errno(int error) { return std::strerror(error); }

std::string Quoted(const std::string& key) {
  return absl::StrFormat("\"%s\"", absl::CHexEscape(key));
}

enum class State { kHandshake, kReady, kWaiting, kClosed };

struct Connection {
  explicit Connection(int fd) : fd(fd), input(MaxFrameBytes(true)) {}

  int fd;
  State state = State::kReady;
  FrameBuffer input;
  // accounted: input.size() as last added to the server's buffered total.
  size_t accounted = 0;
  std::string output;
  size_t output_start = 0;
  // eof: the peer closed (or reset) its side; nothing more will be read.
  bool eof = false;
  std::string challenge;
  // deadline: of the handshake (kHandshake) or of the pending Get / Wait.
  absl::Time deadline = absl::InfiniteFuture();
  // name: set by IdentifyAs; a named connection lost without a goodbye is
  // reported under kLostKey.
  std::string name;
  // The pending Get or Wait: its opcode, distinct keys, how many are unset.
  Opcode wait_opcode = Opcode::kWait;
  std::vector<std::string> wait_keys;
  size_t missing = 0;
  uint32_t wait_ms = 0;

  size_t pending_output() const { return output.size() - output_start; }
};

class Server final : public TcpStoreServer {
 public:
  static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(
      const StoreOptions& options);
  ~Server() override;

  int port() const override { return port_; }
  int64_t refused_connections() const override { return refused_.load(); }

 private:
  Server(const StoreOptions& options, int listen_fd, int wake_fd, int port);

  void Run();
  std::vector<pollfd> PollSet(absl::Time now) const;
  int PollTimeoutMs(absl::Time now) const;
  void AcceptAll();
  void Admit(int fd);
  void ReadFrom(Connection& c, bool hangup);
  void WriteTo(Connection& c);
  bool ProcessInput(Connection& c);
  void Dispatch(Connection& c, Frame frame);
  void HandleAuth(Connection& c, const Frame& frame);
  void HandleSet(Connection& c, Frame& frame);
  void StartWait(Connection& c, Frame& frame);
  void CompleteWait(Connection& c);
  void ExpireWait(Connection& c);
  void ExpireDeadlines();
  void FinishAtEof(Connection& c);
  void Put(const std::string& key, std::string value);
  void Unregister(Connection& c);
  void Reply(Connection& c, Opcode opcode, uint32_t arg,
             const std::vector<std::string>& fields);
  void ReplyError(Connection& c, const absl::Status& status);
  void Refuse(Connection& c, const absl::Status& status);
  void Close(Connection& c, bool orderly);
  void Account(Connection& c);

  const StoreOptions options_;
  const std::string endpoint_;
  const int listen_fd_;
  const int wake_fd_;
  const int port_;
  std::atomic<int64_t> refused_{0};

  // Touched only by the serving thread.
  std::vector<std::unique_ptr<Connection>> connections_;
  absl::flat_hash_map<std::string, std::string> data_;
  size_t stored_bytes_ = 0;
  size_t buffered_bytes_ = 0;
  // waiters_: key -> the connections waiting for it (each at most once).
  absl::flat_hash_map<std::string, std::vector<Connection*>> waiters_;
  bool loss_reported_ = false;
  absl::Time accept_paused_until_ = absl::InfinitePast();

  std::thread thread_;
};

absl::StatusOr<int> Listen(const StoreOptions& options,
                           const std::string& endpoint) {
  KINDLING_ASSIGN_OR_RETURN(Ipv4Address address,
                            ResolveIpv4(options.host, options.port));
  const int fd =
      ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("store %s: socket: %s", endpoint, Errno(errno)));
  }
  // SO_REUSEADDR lets a restarted rank 0 bind while old connections linger
  // in TIME_WAIT; it does not let two listeners share the port.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = address.address;
  addr.sin_port = address.port;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) < 0) {
    const int error = errno;
    ::close(fd);
    if (error == EADDRINUSE) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot start the store on %s: the port is in use", endpoint));
    }
    return absl::UnavailableError(
        absl::StrFormat("cannot bind the store to %s: %s (is %s an address "
                        "of this machine?)",
                        endpoint, Errno(error), options.host));
  }
  if (::listen(fd, kListenBacklog) < 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrFormat(
        "cannot listen on %s for the store: %s", endpoint, Errno(error)));
  }
  return fd;
}

int BoundPort(int fd) {
  sockaddr_in addr{};
  socklen_t size = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
  return ntohs(addr.sin_port);
}

absl::StatusOr<std::unique_ptr<TcpStoreServer>> Server::Start(
    const StoreOptions& options) {
  const std::string endpoint = Endpoint(options.host, options.port);
  KINDLING_ASSIGN_OR_RETURN(const int listen_fd, Listen(options, endpoint));
  // The eventfd wakes poll() when the destructor asks the thread to stop.
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int error = errno;
    ::close(listen_fd);
    return absl::UnavailableError(
        absl::StrFormat("store %s: eventfd: %s", endpoint, Errno(error)));
  }
  return std::unique_ptr<TcpStoreServer>(
      new Server(options, listen_fd, wake_fd, BoundPort(listen_fd)));
}

Server::Server(const StoreOptions& options, int listen_fd, int wake_fd,
               int port)
    : options_(options),
      endpoint_(Endpoint(options.host, port)),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port) {
  thread_ = std::thread([this] { Run(); });
}

Server::~Server() {
  const uint64_t one = 1;
  while (::write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
  thread_.join();
  for (const std::unique_ptr<Connection>& c : connections_) {
    if (c->fd >= 0) ::close(c->fd);
  }
  ::close(listen_fd_);
  ::close(wake_fd_);
}

// The poll set: [0] the wake fd, [1] the listener, then one per connection
// in connections_' order.
std::vector<pollfd> Server::PollSet(absl::Time now) const {
  std::vector<pollfd> fds;
  fds.reserve(connections_.size() + 2);
  fds.push_back({wake_fd_, POLLIN, 0});
  const bool accepting = now >= accept_paused_until_;
  fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
  for (const std::unique_ptr<Connection>& c : connections_) {
    short events = 0;
    if (!c->eof && c->input.room() > 0) events |= POLLIN;
    if (c->pending_output() > 0) events |= POLLOUT;
    fds.push_back({c->fd, events, 0});
  }
  return fds;
}

int Server::PollTimeoutMs(absl::Time now) const {
  absl::Time wake = absl::InfiniteFuture();
  if (now < accept_paused_until_) wake = accept_paused_until_;
  for (const std::unique_ptr<Connection>& c : connections_) {
    wake = std::min(wake, c->deadline);
  }
  if (wake == absl::InfiniteFuture()) return -1;
  const absl::Duration left = wake - now;
  if (left <= absl::ZeroDuration()) return 0;
  // Round up: waking a little early would spin until the deadline.
  const int64_t ms = absl::ToInt64Milliseconds(left) + 1;
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

void Server::Run() {
  while (true) {
    const absl::Time now = absl::Now();
    std::vector<pollfd> fds = PollSet(now);
    const int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs(now));
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;  // the destructor asked to stop
    // Only the connections that were polled: AcceptAll appends more.
    const size_t polled = fds.size() - 2;
    for (size_t i = 0; i < polled; ++i) {
      Connection& c = *connections_[i];
      const short revents = fds[i + 2].revents;
      if (revents & (POLLIN | POLLHUP | POLLERR)) {
        ReadFrom(c, (revents & (POLLHUP | POLLERR)) != 0);
      }
      if ((revents & POLLOUT) && c.state != State::kClosed) WriteTo(c);
    }
    if (fds[1].revents != 0) AcceptAll();
    ExpireDeadlines();
    // Until nothing moves: a Set parsed late in a pass may wake a waiter
    // earlier in it whose next request is already buffered.
    bool progress = true;
    while (progress) {
      progress = false;
      for (const std::unique_ptr<Connection>& c : connections_) {
        progress |= ProcessInput(*c);
      }
    }
    for (const std::unique_ptr<Connection>& c : connections_) {
      if (c->eof) FinishAtEof(*c);
      if (c->state != State::kClosed && c->pending_output() > 0) WriteTo(*c);
    }
    std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) {
      return c->state == State::kClosed;
    });
  }
}

void Server::AcceptAll() {
  while (true) {
    const int fd =
        ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
        errno == ENOMEM) {
      accept_paused_until_ = absl::Now() + kAcceptPause;
    }
    return;  // EAGAIN: none left
  }
}

void Server::Admit(int fd) {
  auto c = std::make_unique<Connection>(fd);
  if (connections_.size() >= kMaxConnections) {
    Refuse(*c, absl::ResourceExhaustedError(absl::StrFormat(
                   "the store at %s serves at most %d connections", endpoint_,
                   kMaxConnections)));
    return;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (options_.token.empty()) {
    Reply(*c, Opcode::kHello, 0, {});
  } else {
    c->challenge.resize(kMacBytes);
    if (RAND_bytes(reinterpret_cast<unsigned char*>(c->challenge.data()),
                   kMacBytes) != 1) {
      Refuse(*c, absl::InternalError("the store could not draw a challenge "
                                     "(OpenSSL RAND_bytes failed)"));
      return;
    }
    c->state = State::kHandshake;
    c->deadline = absl::Now() + options_.handshake_timeout;
    Reply(*c, Opcode::kHello, kHelloAuthRequired, {c->challenge});
  }
  connections_.push_back(std::move(c));
}

void Server::ReadFrom(Connection& c, bool hangup) {
  if (c.state == State::kClosed || c.eof) return;
  const size_t global_room = kMaxBufferedBytes - buffered_bytes_;
  const size_t want = std::min({kReadChunk, c.input.room(), global_room});
  if (want == 0) {
    if (c.input.room() == 0) {
      // A full buffer is not read, so a hangup must end it here (poll would
      // report it again and again).
      c.eof = hangup;
    } else {
      Refuse(c, absl::ResourceExhaustedError(absl::StrFormat(
                    "the store's input buffers hold %d bytes, their bound",
                    kMaxBufferedBytes)));
    }
    return;
  }
  char chunk[kReadChunk];
  const ssize_t got = ::recv(c.fd, chunk, want, 0);
  if (got > 0) {
    c.input.Append(chunk, static_cast<size_t>(got));
    Account(c);
  } else if (got == 0 ||
             (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    c.eof = true;  // closed or reset; FinishAtEof decides how it ended
  }
}

void Server::WriteTo(Connection& c) {
  while (c.pending_output() > 0) {
    const ssize_t sent =
        ::send(c.fd, c.output.data() + c.output_start, c.pending_output(),
               MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      c.eof = true;  // the peer is gone: what it did not read is lost
      c.output.clear();
      c.output_start = 0;
      return;
    }
    c.output_start += static_cast<size_t>(sent);
  }
  if (c.output.capacity() > (1 << 20)) {
    std::string().swap(c.output);  // a large reply's memory goes back
  } else {
    c.output.clear();
  }
  c.output_start = 0;
}

// ProcessInput() parses and serves the connection's complete frames while it
// can take a request; true when it consumed any.
bool Server::ProcessInput(Connection& c) {
  bool progress = false;
  while ((c.state == State::kHandshake || c.state == State::kReady) &&
         c.pending_output() <= kOutputPauseBytes) {
    absl::StatusOr<std::optional<Frame>> next = c.input.Next();
    Account(c);
    if (!next.ok()) {
      Refuse(c, next.status());
      return true;
    }
    if (!next->has_value()) break;
    progress = true;
    Dispatch(c, std::move(**next));
  }
  return progress;
}

void Server::Dispatch(Connection& c, Frame frame) {
  if (c.state == State::kHandshake) {
    if (frame.opcode != Opcode::kAuth) {
      Refuse(c,
             absl::PermissionDeniedError(absl::StrFormat(
                 "the store at %s requires authentication (a token) "
                 "before a %s frame",
                 endpoint_, OpcodeName(static_cast<uint8_t>(frame.opcode)))));
      return;
    }
    HandleAuth(c, frame);
    return;
  }
  switch (frame.opcode) {
    case Opcode::kSet:
      HandleSet(c, frame);
      return;
    case Opcode::kGet:
    case Opcode::kWait:
      StartWait(c, frame);
      return;
    case Opcode::kIdentify:
      c.name = std::move(frame.fields[0]);
      Reply(c, Opcode::kOk, 0, {});
      return;
    case Opcode::kGoodbye:
      Close(c, /*orderly=*/true);
      return;
    default:
      // An auth frame when no token is set, or a server's frame.
      Refuse(c,
             absl::InvalidArgumentError(absl::StrFormat(
                 "unexpected %s frame from a client of the store at %s",
                 OpcodeName(static_cast<uint8_t>(frame.opcode)), endpoint_)));
      return;
  }
}

void Server::HandleAuth(Connection& c, const Frame& frame) {
  absl::StatusOr<std::string> expected = AuthMac(options_.token, c.challenge);
  if (!expected.ok()) {
    Refuse(c, expected.status());
    return;
  }
  if (!MacsEqual(frame.fields[0], *expected)) {
    Refuse(c, absl::PermissionDeniedError(absl::StrFormat(
                  "authentication failed: the answer to the challenge does not "
                  "match this store's token")));
    return;
  }
  c.state = State::kReady;
  c.deadline = absl::InfiniteFuture();
  c.challenge.clear();
  Reply(c, Opcode::kOk, 0, {});
}

void Server::HandleSet(Connection& c, Frame& frame) {
  std::string& key = frame.fields[0];
  std::string& value = frame.fields[1];
  auto old = data_.find(key);
  const size_t old_bytes =
      old == data_.end() ? 0 : old->first.size() + old->second.size();
  const size_t new_total =
      stored_bytes_ - old_bytes + key.size() + value.size();
  if (new_total > kMaxStoredBytes) {
    ReplyError(c, absl::ResourceExhaustedError(absl::StrFormat(
                      "setting %s (%d bytes) would bring the store to %d "
                      "bytes, over its bound %d",
                      Quoted(key), value.size(), new_total, kMaxStoredBytes)));
    return;
  }
  Put(key, std::move(value));
  Reply(c, Opcode::kOk, 0, {});
}

// Put() stores a value and answers the waiters it completes.
void Server::Put(const std::string& key, std::string value) {
  auto [it, inserted] = data_.try_emplace(key);
  if (!inserted) stored_bytes_ -= key.size() + it->second.size();
  stored_bytes_ += key.size() + value.size();
  it->second = std::move(value);
  if (!inserted) return;  // waiters wait for a key to exist, not to change
  auto waiting = waiters_.find(key);
  if (waiting == waiters_.end()) return;
  std::vector<Connection*> woken = std::move(waiting->second);
  waiters_.erase(waiting);
  for (Connection* w : woken) {
    if (--w->missing == 0) CompleteWait(*w);
  }
}

void Server::StartWait(Connection& c, Frame& frame) {
  c.wait_opcode = frame.opcode;
  c.wait_ms = frame.arg;
  c.wait_keys.clear();
  c.missing = 0;
  absl::flat_hash_set<std::string> seen;
  for (std::string& key : frame.fields) {
    if (!seen.insert(key).second) continue;
    if (!data_.contains(key)) {
      waiters_[key].push_back(&c);
      ++c.missing;
    }
    c.wait_keys.push_back(std::move(key));
  }
  if (c.missing == 0) {
    CompleteWait(c);
    return;
  }
  c.state = State::kWaiting;
  c.deadline = absl::Now() + absl::Milliseconds(frame.arg);
}

void Server::CompleteWait(Connection& c) {
  if (c.wait_opcode == Opcode::kGet) {
    Reply(c, Opcode::kOk, 0, {data_.at(c.wait_keys[0])});
  } else {
    Reply(c, Opcode::kOk, 0, {});
  }
  c.wait_keys.clear();
  c.state = State::kReady;
  c.deadline = absl::InfiniteFuture();
}

// MissingKeysText() lists the missing keys, shortened to fit an error reply.
std::string MissingKeysText(
    const std::vector<std::string>& keys,
    const absl::flat_hash_map<std::string, std::string>& data) {
  std::string text;
  size_t listed = 0, missing = 0;
  for (const std::string& key : keys) {
    if (data.contains(key)) continue;
    ++missing;
    if (text.size() > kMaxMessageBytes / 2) continue;
    absl::StrAppend(&text, listed == 0 ? "" : ", ", Quoted(key));
    ++listed;
  }
  if (listed < missing) {
    absl::StrAppend(&text, absl::StrFormat(" and %d more", missing - listed));
  }
  return text;
}

void Server::ExpireWait(Connection& c) {
  const absl::Duration waited = absl::Milliseconds(c.wait_ms);
  const std::string missing = MissingKeysText(c.wait_keys, data_);
  Unregister(c);
  c.state = State::kReady;
  c.deadline = absl::InfiniteFuture();
  if (c.wait_opcode == Opcode::kGet) {
    ReplyError(c, absl::DeadlineExceededError(absl::StrFormat(
                      "Get(%s) timed out after %s: the key was never set",
                      missing, absl::FormatDuration(waited))));
  } else {
    ReplyError(c,
               absl::DeadlineExceededError(absl::StrFormat(
                   "Wait for %d key(s) timed out after %s; missing: %s",
                   c.wait_keys.size(), absl::FormatDuration(waited), missing)));
  }
  c.wait_keys.clear();
}

void Server::ExpireDeadlines() {
  const absl::Time now = absl::Now();
  for (const std::unique_ptr<Connection>& c : connections_) {
    if (now < c->deadline) continue;
    if (c->state == State::kHandshake) {
      Refuse(*c,
             absl::DeadlineExceededError(absl::StrFormat(
                 "the store at %s dropped a connection that did not "
                 "answer its challenge within %s",
                 endpoint_, absl::FormatDuration(options_.handshake_timeout))));
    } else if (c->state == State::kWaiting) {
      ExpireWait(*c);
    }
  }
}

// FinishAtEof() ends a connection whose peer closed: orderly when a goodbye
// is among the bytes it left, refused when they end inside a frame (or the
// peer left during the handshake), lost otherwise.
void Server::FinishAtEof(Connection& c) {
  if (c.state == State::kClosed) return;
  // Frames left behind a pending Get (or queued output) are not served:
  // the peer is gone. Only a goodbye among them matters.
  absl::Status tail = absl::OkStatus();
  while (true) {
    absl::StatusOr<std::optional<Frame>> next = c.input.Next();
    if (!next.ok()) {
      tail = next.status();
      break;
    }
    if (!next->has_value()) {
      tail = c.input.AtEnd();
      break;
    }
    if ((*next)->opcode == Opcode::kGoodbye) {
      Close(c, /*orderly=*/true);
      return;
    }
  }
  Account(c);
  if (!tail.ok()) {
    Refuse(c, tail);
  } else if (c.state == State::kHandshake) {
    Refuse(c, absl::PermissionDeniedError(absl::StrFormat(
                  "a connection to the store at %s closed before it "
                  "authenticated",
                  endpoint_)));
  } else {
    Close(c, /*orderly=*/false);
  }
}

void Server::Unregister(Connection& c) {
  for (const std::string& key : c.wait_keys) {
    auto waiting = waiters_.find(key);
    if (waiting == waiters_.end()) continue;
    std::erase(waiting->second, &c);
    if (waiting->second.empty()) waiters_.erase(waiting);
  }
}

void Server::Reply(Connection& c, Opcode opcode, uint32_t arg,
                   const std::vector<std::string>& fields) {
  c.output.append(EncodeFrame(opcode, arg, fields));
}

void Server::ReplyError(Connection& c, const absl::Status& status) {
  std::string message(status.message());
  if (message.size() > kMaxMessageBytes) message.resize(kMaxMessageBytes);
  Reply(c, Opcode::kError, static_cast<uint32_t>(status.code()), {message});
}

// Refuse() answers with the error (when the peer still reads) and closes.
// The send is one non-blocking try: a peer that reads nothing gets nothing.
void Server::Refuse(Connection& c, const absl::Status& status) {
  refused_.fetch_add(1);
  // Even after EOF: a peer that only shut down its sending side still reads.
  ReplyError(c, status);
  Close(c, /*orderly=*/false);
}

void Server::Close(Connection& c, bool orderly) {
  if (c.state == State::kClosed) return;
  if (c.pending_output() > 0) {
    WriteTo(c);  // one best-effort try; the socket is non-blocking
    ::shutdown(c.fd, SHUT_WR);
  }
  Unregister(c);
  c.wait_keys.clear();
  ::close(c.fd);
  c.fd = -1;
  c.state = State::kClosed;
  c.deadline = absl::InfiniteFuture();
  buffered_bytes_ -= c.accounted;
  c.accounted = 0;
  if (!orderly && !c.name.empty() && !loss_reported_) {
    // The first loss only: later ones are usually its consequences.
    loss_reported_ = true;
    Put(kLostKey, c.name);
  }
}

void Server::Account(Connection& c) {
  buffered_bytes_ = buffered_bytes_ - c.accounted + c.input.size();
  c.accounted = c.input.size();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(
    const StoreOptions& options) {
  return Server::Start(options);
}

}  // namespace kindling::distributed
