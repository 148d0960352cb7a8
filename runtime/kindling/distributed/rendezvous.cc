#include "kindling/distributed/rendezvous.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "kindling/core/status_macros.h"

namespace kindling::distributed {

absl::StatusOr<Rendezvous> JoinRendezvous(const StoreOptions& options,
                                          int rank) {
  Rendezvous rendezvous;
  rendezvous.where = options;
  if (rank == 0) {
    absl::StatusOr<std::unique_ptr<TcpStoreServer>> started =
        TcpStoreServer::Start(options);
    if (!started.ok()) return started.status();
    rendezvous.server = *std::move(started);
    rendezvous.where.port = rendezvous.server->port();
  }
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> store =
      TcpStoreClient::Connect(rendezvous.where);
  if (!store.ok()) return store.status();
  rendezvous.store = *std::move(store);
  KINDLING_RETURN_IF_ERROR(rendezvous.store->IdentifyAs(std::to_string(rank)));
  return rendezvous;
}

std::string DescribeLostPeer(TcpStoreClient& store) {
  if (!store.Wait({kLostKey}, absl::Milliseconds(500)).ok()) {
    return "; no rank is known to have ended (a peer may be hung, or the "
           "network lost)";
  }
  absl::StatusOr<std::string> lost = store.Get(kLostKey);
  if (!lost.ok()) return "";
  return absl::StrCat("; rank ", *lost, " is lost (its process ended)");
}

}  // namespace kindling::distributed
