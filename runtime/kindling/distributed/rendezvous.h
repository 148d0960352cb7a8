// Rendezvous: the store connection every rank of a Gloo or NCCL job holds
// (rank 0 also hosts the store), and what it tells about a lost rank.
//
//   absl::StatusOr<Rendezvous> rendezvous = JoinRendezvous(store_options,
//   rank);
//   ...  // a collective failed:
//   error_message += DescribeLostPeer(*rendezvous->store);
#ifndef KINDLING_DISTRIBUTED_RENDEZVOUS_H_
#define KINDLING_DISTRIBUTED_RENDEZVOUS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kindling/distributed/tcp_store.h"

namespace kindling::distributed {

struct Rendezvous {
  std::unique_ptr<TcpStoreServer> server;  // rank 0 only
  std::unique_ptr<TcpStoreClient> store;
  // The store's address as connected (rank 0: the port it picked).
  StoreOptions where;
};

// JoinRendezvous() starts the store on rank 0 (binding options.host),
// connects to it and names the connection after `rank`, so the store can
// tell the others when this rank's process ends.
[[nodiscard]] absl::StatusOr<Rendezvous> JoinRendezvous(
    const StoreOptions& options, int rank);

// DescribeLostPeer() is what to append to a failed collective's message:
// "; rank N is lost (its process ended)" when the store recorded a
// connection that ended without a goodbye, else a note that no rank is
// known to have ended. It waits half a second at most: a process that died
// closed its store connection when it closed the engine's, so the store
// knows within milliseconds, and the rest covers a loaded machine.
std::string DescribeLostPeer(TcpStoreClient& store);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_RENDEZVOUS_H_
