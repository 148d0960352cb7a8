// The rendezvous store: a small TCP key-value service that rank 0 hosts and
// every rank (rank 0 too) uses to find the others (PyTorch's TCPStore
// design). It does set / get / wait with timeouts, nothing else. Gloo's
// rendezvous and NCCL's unique id travel through it.
//
//   // rank 0
//   absl::StatusOr<std::unique_ptr<TcpStoreServer>> server =
//       TcpStoreServer::Start({.host = "10.0.0.1", .port = 29500});
//   // every rank
//   absl::StatusOr<std::unique_ptr<TcpStoreClient>> store =
//       TcpStoreClient::Connect({.host = "10.0.0.1", .port = 29500});
//   KINDLING_RETURN_IF_ERROR((*store)->Set("rank/1", "address..."));
//   absl::StatusOr<std::string> value = (*store)->Get("rank/0");  // waits
//
// It is a network service, so it trusts nothing it reads: it binds only to
// the address it was given, bounds every frame (key and value sizes, keys
// per request, stored bytes, waiting clients, connections) and answers a
// malformed or oversized frame with an error and a closed connection. With a
// shared secret (StoreOptions::token, or KINDLING_DIST_TOKEN) every
// connection first proves it knows the secret by an HMAC-SHA256 of a random
// challenge, so the token never crosses the wire; a stranger is refused and
// the job goes on. The data connections of Gloo and MPI are not
// authenticated (as in PyTorch): run on a network you trust.
#ifndef KINDLING_DISTRIBUTED_TCP_STORE_H_
#define KINDLING_DISTRIBUTED_TCP_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kindling::distributed {

struct StoreOptions {
  // host: the server binds to this address only ("127.0.0.1", "10.0.0.1",
  // or "0.0.0.0" when all interfaces are really wanted); clients connect to
  // it. A name is resolved (IPv4).
  std::string host = "127.0.0.1";
  // port: 0 lets the server pick a free port (TcpStoreServer::port()).
  int port = 0;
  // timeout bounds connecting (the server may start later than a client),
  // and each Get / Wait.
  absl::Duration timeout = absl::Minutes(5);
  // token: the shared secret; empty means no authentication.
  std::string token;
  // handshake_timeout: the server drops a connection that has not answered
  // its challenge within this, so a silent stranger holds no slot for long.
  absl::Duration handshake_timeout = absl::Seconds(5);
};

// TokenFromEnvironment() is KINDLING_DIST_TOKEN, empty when unset.
std::string TokenFromEnvironment();

class TcpStoreServer {
 public:
  // Start() binds host:port, listens and serves on a thread of its own until
  // destroyed. Unavailable when the port is in use (naming it).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TcpStoreServer>> Start(
      const StoreOptions& options);
  virtual ~TcpStoreServer() = default;
  // port() is the port it listens on (the one picked when 0 was asked).
  virtual int port() const = 0;
  // refused_connections() counts connections closed for a bad frame or a
  // failed authentication, and those turned away at the connection bound
  // (tests and logs).
  virtual int64_t refused_connections() const = 0;
};

class TcpStoreClient {
 public:
  // Connect() connects to the server, retrying until options.timeout (the
  // server may not be up yet), and authenticates when a token is set.
  // PermissionDenied when the store refused the token, or when one side has
  // a token and the other none. A client serves one call at a time (calls
  // from several threads take turns). After a call timed out on the client's
  // side or the connection failed, later calls return FailedPrecondition.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TcpStoreClient>> Connect(
      const StoreOptions& options);
  virtual ~TcpStoreClient() = default;

  // Set() stores `value` under `key` (replacing any), waking waiters.
  [[nodiscard]] virtual absl::Status Set(const std::string& key,
                                         const std::string& value) = 0;
  // Get() waits up to the timeout for `key`, then returns its value;
  // DeadlineExceeded naming the key when it never came.
  [[nodiscard]] virtual absl::StatusOr<std::string> Get(
      const std::string& key) = 0;
  // Wait() returns once every key exists, DeadlineExceeded naming the
  // missing ones after `timeout`.
  [[nodiscard]] virtual absl::Status Wait(const std::vector<std::string>& keys,
                                          absl::Duration timeout) = 0;
  // IdentifyAs() names this connection (a rank: "3"). When a named
  // connection ends without the client's orderly goodbye (its process died,
  // the network dropped it), the server sets kLostKey to that name (the
  // first such loss only), so the surviving ranks can say which peer they
  // lost. The destructor says goodbye.
  [[nodiscard]] virtual absl::Status IdentifyAs(const std::string& name) = 0;
};

// kLostKey: the key the server sets to the name of the first connection that
// ended without a goodbye.
inline constexpr char kLostKey[] = "kindling/lost";

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_TCP_STORE_H_
