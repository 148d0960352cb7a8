// The Gloo communicator: collectives over TCP between processes, on one
// machine or many (Gloo is PyTorch's CPU backend; Debian's libgloo-dev).
//
//   absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectGloo({
//       .rank = 1, .world_size = 2,
//       .store = {.host = "10.0.0.1", .port = 29500}});
//
// Rendezvous goes through the TcpStore (tcp_store.h) that rank 0 hosts at
// store.host:store.port (or through a shared directory, file_store_path): each
// rank publishes the address of its Gloo endpoint there and connects to every
// other rank's (a full mesh). Each rank's endpoint listens on the local address
// through which it reaches the store (the interface that routes to rank 0), or
// on `listen_host` when set.
//
// A lost peer: Gloo reports a closed connection or a timeout; the error
// names the operation and, when the store recorded which rank's connection
// ended without a goodbye, that rank.
#ifndef KINDLING_DISTRIBUTED_GLOO_COMMUNICATOR_H_
#define KINDLING_DISTRIBUTED_GLOO_COMMUNICATOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {

struct GlooOptions {
  int rank = 0;
  int world_size = 1;
  // store: where rank 0 hosts the rendezvous store (it binds store.host),
  // its timeout (connecting and rendezvous) and shared secret.
  StoreOptions store{};
  // timeout bounds each collective.
  absl::Duration timeout = absl::Minutes(5);
  // listen_host: the address this rank's Gloo endpoint listens on; empty
  // picks the local address that routes to store.host (with a file store:
  // this machine's host name's address).
  std::string listen_host;
  // file_store_path: when set, the ranks meet through files in this
  // directory (Gloo's FileStore, on a file system every rank shares)
  // instead of the TCP store; a lost rank is then not named.
  std::string file_store_path;
};

// ConnectGloo() starts the store (rank 0), connects to it, and connects the
// full mesh. It sets SIGPIPE to be ignored unless the program handles it
// already: Gloo's socket writes raise it when a peer is lost, and the default
// action would end the process instead of returning the lost rank's error.
// InvalidArgument for a bad rank or world size; the store's or Gloo's error
// (naming host:port, or the rank that did not come) otherwise.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(
    const GlooOptions& options);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_GLOO_COMMUNICATOR_H_
