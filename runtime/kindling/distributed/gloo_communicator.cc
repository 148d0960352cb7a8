#include "kindling/distributed/gloo_communicator.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/store.h"
#include "gloo/transport/tcp/device.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/reduce_math.h"
#include "kindling/distributed/rendezvous.h"

namespace kindling::distributed {
namespace {

std::chrono::milliseconds ToChrono(absl::Duration duration) {
  return std::chrono::milliseconds(absl::ToInt64Milliseconds(duration));
}

// GlooStore: Gloo's rendezvous::Store over the TcpStore client. Gloo expects
// exceptions from a store; the message keeps the store's status.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(TcpStoreClient& client, absl::Duration timeout)
      : client_(client), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Throw(client_.Set(Key(key), std::string(data.begin(), data.end())));
  }
  std::vector<char> get(const std::string& key) override {
    absl::StatusOr<std::string> value = client_.Get(Key(key));
    Throw(value.status());
    return std::vector<char>(value->begin(), value->end());
  }
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, ToChrono(timeout_));
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& key : keys) prefixed.push_back(Key(key));
    Throw(client_.Wait(prefixed, absl::Milliseconds(timeout.count())));
  }

 private:
  static std::string Key(const std::string& key) {
    return "kindling/gloo/" + key;
  }
  static void Throw(const absl::Status& status) {
    if (!status.ok()) throw gloo::IoException(status.ToString());
  }

  TcpStoreClient& client_;
  absl::Duration timeout_;
};

// RoutedLocalAddress() is the local IPv4 address the kernel would use to
// reach host:port (a UDP socket's connect sends nothing).
absl::StatusOr<std::string> RoutedLocalAddress(const std::string& host,
                                               int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int error =
      getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (error != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot resolve the store host '%s': %s", host, gai_strerror(error)));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  const bool routed =
      connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  close(fd);
  if (!routed) {
    return absl::UnavailableError(
        absl::StrFormat("no route to the store host %s", host));
  }
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return std::string(text);
}

// HostNameAddress() is the IPv4 address this machine's host name resolves
// to (what peers sharing a file store connect to), or 127.0.0.1 when the
// name does not resolve to one.
absl::StatusOr<std::string> HostNameAddress() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return std::string("127.0.0.1");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (getaddrinfo(name, nullptr, &hints, &found) != 0 || found == nullptr) {
    return std::string("127.0.0.1");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, freeaddrinfo);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr,
            text, sizeof(text));
  return std::string(text);
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const GlooOptions& options,
                   std::unique_ptr<TcpStoreServer> server,
                   std::unique_ptr<TcpStoreClient> store,
                   std::shared_ptr<gloo::rendezvous::Context> context)
      : Communicator(options.rank, options.world_size, options.timeout),
        server_(std::move(server)),
        store_(std::move(store)),
        context_(std::move(context)) {}

  std::string backend() const override { return "gloo"; }
  Device device() const override { return Device::Cpu(); }

  absl::Status AllReduce(void* data, int64_t count, DType dtype,
                         ReduceOp op) override {
    if (!IsReducibleDType(dtype)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AllReduce: dtype %s cannot be reduced",
                          std::string(DTypeName(dtype))));
    }
    return Run("AllReduce", count, [&] {
      if (count == 0) return;
      gloo::AllreduceOptions options(context_);
      options.setTimeout(ToChrono(timeout()));
      options.setTag(NextTag());
      SetTypedOutput(options, data, count, dtype);
      options.setReduceFunction(ReduceFunction(dtype, op));
      gloo::allreduce(options);
      if (op == ReduceOp::kAverage)
        DivideInPlace(data, count, dtype, world_size());
    });
  }

  absl::Status Broadcast(void* data, int64_t bytes, int root) override {
    KINDLING_RETURN_IF_ERROR(CheckRoot(root, "Broadcast"));
    return Run("Broadcast", bytes, [&] {
      if (bytes == 0) return;
      gloo::BroadcastOptions options(context_);
      options.setTimeout(ToChrono(timeout()));
      options.setTag(NextTag());
      options.setOutput(static_cast<uint8_t*>(data), bytes);
      options.setRoot(root);
      gloo::broadcast(options);
    });
  }

  absl::Status AllGather(const void* in, void* out, int64_t bytes) override {
    return Run("AllGather", bytes, [&] {
      if (bytes == 0) return;
      gloo::AllgatherOptions options(context_);
      options.setTimeout(ToChrono(timeout()));
      options.setTag(NextTag());
      options.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
      options.setOutput(static_cast<uint8_t*>(out), bytes * world_size());
      gloo::allgather(options);
    });
  }

  absl::Status Barrier() override {
    return Run("Barrier", 0, [&] {
      gloo::BarrierOptions options(context_);
      options.setTimeout(ToChrono(timeout()));
      options.setTag(NextTag());
      gloo::barrier(options);
    });
  }

 private:
  // Gloo's reduce functions take (out, in1, in2, count) in elements.
  static gloo::AllreduceOptions::Func ReduceFunction(DType dtype, ReduceOp op) {
    const bool max = op == ReduceOp::kMax;
    return [dtype, max](void* out, const void* a, const void* b, size_t n) {
      CombineElements(out, a, b, static_cast<int64_t>(n), dtype, max);
    };
  }

  // Gloo learns the element size from the pointer type; only the width
  // matters (the reduce function knows the dtype).
  static void SetTypedOutput(gloo::AllreduceOptions& options, void* data,
                             int64_t count, DType dtype) {
    switch (DTypeSize(dtype)) {
      case 2:
        options.setOutput(static_cast<uint16_t*>(data), count);
        return;
      case 4:
        options.setOutput(static_cast<float*>(data), count);
        return;
      default:
        options.setOutput(static_cast<double*>(data), count);
        return;
    }
  }

  uint32_t NextTag() { return next_tag_++; }

  // Run() runs one collective under the lock, turning Gloo's exceptions
  // into a Status that names the operation and, when the store knows, the
  // lost rank; a failure breaks the communicator.
  template <class Fn>
  absl::Status Run(const char* operation, int64_t size, Fn&& fn) {
    absl::MutexLock lock(&mutex_);
    if (!broken_.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          operation, ": the communicator is broken by an earlier failure (",
          broken_.message(), ")"));
    }
    try {
      fn();
      return absl::OkStatus();
    } catch (const std::exception& error) {
      broken_ = absl::UnavailableError(
          absl::StrFormat("%s (%d) on rank %d of %d failed: %s%s", operation,
                          size, rank(), world_size(), error.what(),
                          store_ != nullptr ? DescribeLostPeer(*store_) : ""));
      return broken_;
    }
  }

  absl::Mutex mutex_;
  absl::Status broken_ ABSL_GUARDED_BY(mutex_);
  uint32_t next_tag_ ABSL_GUARDED_BY(mutex_) = 0;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStoreClient> store_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
};

// Gloo writes to its sockets with writev(), which raises SIGPIPE when the
// peer has reset the connection; by default that signal kills the process
// (exit 141) before Gloo can report the lost rank. So SIGPIPE is ignored, as
// Python does at start-up, unless the program installed its own handler.
void IgnoreSigpipeUnlessHandled() {
  static absl::Mutex mutex(absl::kConstInit);
  absl::MutexLock lock(&mutex);
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) != 0) return;
  const bool is_default =
      (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
  if (!is_default) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(
    const GlooOptions& options) {
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ConnectGloo: rank %d is not in a world of %d ranks",
                        options.rank, options.world_size));
  }
  IgnoreSigpipeUnlessHandled();
  const bool file_store = !options.file_store_path.empty();
  Rendezvous rendezvous;
  std::string where = options.file_store_path;
  if (!file_store) {
    absl::StatusOr<Rendezvous> joined =
        JoinRendezvous(options.store, options.rank);
    if (!joined.ok()) return joined.status();
    rendezvous = *std::move(joined);
    where =
        absl::StrFormat("%s:%d", rendezvous.where.host, rendezvous.where.port);
  }
  std::string listen_host = options.listen_host;
  if (listen_host.empty()) {
    absl::StatusOr<std::string> local =
        file_store
            ? HostNameAddress()
            : RoutedLocalAddress(rendezvous.where.host, rendezvous.where.port);
    if (!local.ok()) return local.status();
    listen_host = *local;
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(
      options.rank, options.world_size);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = listen_host;
    std::shared_ptr<gloo::transport::Device> device =
        gloo::transport::tcp::CreateDevice(attr);
    context->setTimeout(ToChrono(options.store.timeout));
    if (file_store) {
      gloo::rendezvous::FileStore store(options.file_store_path);
      context->connectFullMesh(store, device);
    } else {
      GlooStore adapter(*rendezvous.store, options.store.timeout);
      context->connectFullMesh(adapter, device);
    }
    context->setTimeout(ToChrono(options.timeout));
  } catch (const std::exception& error) {
    return absl::UnavailableError(absl::StrFormat(
        "Gloo rendezvous of rank %d of %d through the store at %s "
        "(listening on %s) failed: %s",
        options.rank, options.world_size, where, listen_host, error.what()));
  }
  return std::unique_ptr<Communicator>(
      new GlooCommunicator(options, std::move(rendezvous.server),
                           std::move(rendezvous.store), std::move(context)));
}

}  // namespace kindling::distributed
