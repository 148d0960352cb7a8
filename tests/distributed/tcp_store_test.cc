// The rendezvous store (runtime/kindling/distributed/tcp_store.h): set / get
// / wait with timeouts, binding, connection retries, malformed frames from
// raw sockets, the token handshake, and the lost-connection report.
#include "kindling/distributed/tcp_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/distributed/store_protocol.h"

namespace kindling::distributed {
namespace {

using ::testing::HasSubstr;

StoreOptions LocalOptions(int port = 0, const std::string& token = "") {
  StoreOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.timeout = absl::Seconds(10);
  options.token = token;
  return options;
}

std::unique_ptr<TcpStoreServer> StartServer(const StoreOptions& options) {
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> server =
      TcpStoreServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<TcpStoreClient> ConnectClient(const StoreOptions& options) {
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> client =
      TcpStoreClient::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// A raw TCP connection to 127.x.y.z:port with 5 s socket timeouts; -1 when
// connect fails (errno says why).
int RawConnect(int port, const char* address = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval five{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof(five));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &five, sizeof(five));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, address, &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

void SendRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// ReadFrameRaw() reads one frame; nullopt at EOF, reset or timeout.
std::optional<Frame> ReadFrameRaw(int fd) {
  std::string bytes;
  char chunk[4096];
  while (true) {
    absl::StatusOr<std::optional<ParsedFrame>> parsed = ParseFrame(bytes);
    if (!parsed.ok()) return std::nullopt;
    if (parsed->has_value()) return std::move((*parsed)->frame);
    const ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got <= 0) return std::nullopt;
    bytes.append(chunk, static_cast<size_t>(got));
  }
}

// ClosedByServer() reads until EOF or reset: true when the server closed
// the connection within the socket timeout.
bool ClosedByServer(int fd) {
  char chunk[4096];
  while (true) {
    const ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got == 0) return true;
    if (got < 0) return errno == ECONNRESET;
  }
}

// A raw client past the (tokenless) hello.
int RawClient(int port) {
  const int fd = RawConnect(port);
  EXPECT_GE(fd, 0);
  std::optional<Frame> hello = ReadFrameRaw(fd);
  EXPECT_TRUE(hello.has_value() && hello->opcode == Opcode::kHello);
  return fd;
}

bool WaitForRefused(const TcpStoreServer& server, int64_t count) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (server.refused_connections() < count) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

void ExpectWorks(TcpStoreClient& client, const std::string& key) {
  ASSERT_TRUE(client.Set(key, "value of " + key).ok());
  absl::StatusOr<std::string> value = client.Get(key);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "value of " + key);
}

TEST(TcpStoreTest, SetGetRoundTrip) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  std::unique_ptr<TcpStoreClient> client =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(client, nullptr);
  const std::string binary("a\0b\xff", 4);
  const std::string large(1 << 20, 'x');
  ASSERT_TRUE(client->Set("rank/0", "10.0.0.1:4000").ok());
  ASSERT_TRUE(client->Set("binary", binary).ok());
  ASSERT_TRUE(client->Set("large", large).ok());
  ASSERT_TRUE(client->Set("empty", "").ok());
  EXPECT_EQ(*client->Get("rank/0"), "10.0.0.1:4000");
  EXPECT_EQ(*client->Get("binary"), binary);
  EXPECT_EQ(*client->Get("large"), large);
  EXPECT_EQ(*client->Get("empty"), "");
  ASSERT_TRUE(client->Set("rank/0", "replaced").ok());
  EXPECT_EQ(*client->Get("rank/0"), "replaced");
  EXPECT_TRUE(
      client->Wait({"rank/0", "binary", "rank/0"}, absl::Seconds(1)).ok());
  EXPECT_EQ(server->refused_connections(), 0);
}

TEST(TcpStoreTest, OversizedArgumentsAreRefusedByTheClient) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  std::unique_ptr<TcpStoreClient> client =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(
      client->Set(std::string(kMaxKeyBytes + 1, 'k'), "v")));
  EXPECT_TRUE(absl::IsInvalidArgument(
      client->Set("k", std::string(kMaxValueBytes + 1, 'v'))));
  EXPECT_TRUE(absl::IsInvalidArgument(
      client->Wait(std::vector<std::string>(kMaxKeysPerRequest + 1, "k"),
                   absl::Seconds(1))));
  ExpectWorks(*client, "still");
}

TEST(TcpStoreTest, GetWaitsForALaterSetFromAnotherClient) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  std::unique_ptr<TcpStoreClient> reader =
      ConnectClient(LocalOptions(server->port()));
  std::unique_ptr<TcpStoreClient> writer =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(reader, nullptr);
  ASSERT_NE(writer, nullptr);
  absl::StatusOr<std::string> value;
  absl::Status waited;
  const absl::Time start = absl::Now();
  std::thread get([&] {
    value = reader->Get("nccl/id");
    waited = reader->Wait({"nccl/id", "other"}, absl::Seconds(10));
  });
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(writer->Set("unrelated", "x").ok());
  ASSERT_TRUE(writer->Set("nccl/id", "the id").ok());
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(writer->Set("other", "y").ok());
  get.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "the id");
  EXPECT_TRUE(waited.ok()) << waited;
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(250));
}

TEST(TcpStoreTest, WaitTimesOutNamingTheMissingKey) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  std::unique_ptr<TcpStoreClient> client =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Set("present", "1").ok());
  const absl::Time start = absl::Now();
  absl::Status status =
      client->Wait({"present", "rank/3/address"}, absl::Milliseconds(500));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("rank/3/address"));
  EXPECT_THAT(std::string(status.message()),
              ::testing::Not(HasSubstr("\"present\"")));
  EXPECT_GE(took, absl::Milliseconds(450));
  EXPECT_LT(took, absl::Seconds(3));
  // The server timed the wait out itself, so the connection goes on.
  ExpectWorks(*client, "after the timeout");
}

TEST(TcpStoreTest, GetTimesOutNamingTheKey) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  StoreOptions options = LocalOptions(server->port());
  options.timeout = absl::Milliseconds(300);
  std::unique_ptr<TcpStoreClient> client = ConnectClient(options);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<std::string> value = client->Get("never/set");
  EXPECT_TRUE(absl::IsDeadlineExceeded(value.status())) << value.status();
  EXPECT_THAT(std::string(value.status().message()), HasSubstr("never/set"));
}

TEST(TcpStoreTest, BindsOnlyTheGivenHost) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  ASSERT_NE(server, nullptr);
  const int on_host = RawConnect(server->port(), "127.0.0.1");
  ASSERT_GE(on_host, 0);
  sockaddr_in peer{};
  socklen_t size = sizeof(peer);
  ASSERT_EQ(::getpeername(on_host, reinterpret_cast<sockaddr*>(&peer), &size),
            0);
  EXPECT_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  ::close(on_host);
  // 127.0.0.2 is this machine too (all of 127/8 is loopback): a server bound
  // to every interface would answer there; one bound to 127.0.0.1 does not.
  EXPECT_LT(RawConnect(server->port(), "127.0.0.2"), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
  StoreOptions elsewhere = LocalOptions(server->port());
  elsewhere.host = "127.0.0.2";
  elsewhere.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> client =
      TcpStoreClient::Connect(elsewhere);
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.status())) << client.status();
  EXPECT_THAT(std::string(client.status().message()),
              HasSubstr(absl::StrCat("127.0.0.2:", server->port())));
}

TEST(TcpStoreTest, PortInUseIsUnavailableNamingIt) {
  std::unique_ptr<TcpStoreServer> first = StartServer(LocalOptions());
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<TcpStoreServer>> second =
      TcpStoreServer::Start(LocalOptions(first->port()));
  EXPECT_TRUE(absl::IsUnavailable(second.status())) << second.status();
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(absl::StrCat("127.0.0.1:", first->port())));
}

TEST(TcpStoreTest, AClientStartedBeforeTheServerConnectsOnceItIsUp) {
  int port = 0;
  {
    std::unique_ptr<TcpStoreServer> probe = StartServer(LocalOptions());
    ASSERT_NE(probe, nullptr);
    port = probe->port();
  }
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> client;
  std::thread connect(
      [&] { client = TcpStoreClient::Connect(LocalOptions(port)); });
  absl::SleepFor(absl::Milliseconds(400));
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions(port));
  connect.join();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(client.ok()) << client.status();
  ExpectWorks(**client, "late server");
}

TEST(TcpStoreTest, ConnectGivesUpAfterTheTimeoutNamingTheEndpoint) {
  int port = 0;
  {
    std::unique_ptr<TcpStoreServer> probe = StartServer(LocalOptions());
    port = probe->port();
  }
  StoreOptions options = LocalOptions(port);
  options.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> client =
      TcpStoreClient::Connect(options);
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.status())) << client.status();
  EXPECT_THAT(std::string(client.status().message()),
              HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(std::string(client.status().message()), HasSubstr("300ms"));
}

std::string Header(uint8_t opcode, uint32_t field_count, uint32_t payload_bytes,
                   uint8_t version = kProtocolVersion) {
  std::string frame = EncodeFrame(Opcode::kGoodbye, 0, {});
  frame[4] = static_cast<char>(version);
  frame[5] = static_cast<char>(opcode);
  for (int i = 0; i < 4; ++i) {
    frame[12 + i] = static_cast<char>((field_count >> (8 * i)) & 0xff);
    frame[16 + i] = static_cast<char>((payload_bytes >> (8 * i)) & 0xff);
  }
  return frame;
}

std::string U32(uint32_t value) {
  std::string bytes;
  for (int i = 0; i < 4; ++i) bytes.push_back((value >> (8 * i)) & 0xff);
  return bytes;
}

struct MalformedCase {
  std::string name;
  std::string bytes;
  std::string named;        // what the error reply must say
  bool then_close = false;  // shut the sending side down after the bytes
};

std::vector<MalformedCase> MalformedCases() {
  const std::string set = EncodeFrame(Opcode::kSet, 0, {"key", "value"});
  std::string long_key = Header(1, 2, 8 + 5000 + 1) + U32(5000);
  std::string garbage;
  for (int i = 0; i < 200; ++i) garbage.push_back(static_cast<char>(i * 37));
  return {
      {"bad magic", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "bad magic"},
      {"garbage", garbage, "bad magic"},
      {"bad version", Header(1, 2, 16, /*version=*/9), "version is 9"},
      {"unknown opcode", Header(0x42, 0, 0), "unknown opcode 0x42"},
      {"reply opcode from a client", EncodeFrame(Opcode::kOk, 0, {}),
       "unexpected ok frame"},
      {"field count", Header(1, 7, 28), "field_count is 7"},
      // The key's length prefix is refused before the 5000 bytes come.
      {"oversized key length", long_key,
       "field 0 (key) of a set frame is 5000 bytes, over its bound 4096"},
      // A 1 GiB set: refused at its header, nothing is buffered for it.
      {"oversized value length", Header(1, 2, 1u << 30),
       "payload_bytes is 1073741824 for a set frame, over its bound"},
      {"fields past the payload", Header(2, 1, 8) + U32(100) + "abcd",
       "runs past payload_bytes"},
      {"truncated frame then close", set.substr(0, set.size() - 3),
       "truncated frame", true},
      {"truncated header then close", set.substr(0, 11), "truncated frame",
       true},
  };
}

TEST(TcpStoreTest, MalformedFramesCloseTheConnectionAndTheJobGoesOn) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpStoreClient> good =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(good, nullptr);
  int64_t refused = 0;
  for (const MalformedCase& bad : MalformedCases()) {
    SCOPED_TRACE(bad.name);
    const int fd = RawClient(server->port());
    SendRaw(fd, bad.bytes);
    if (bad.then_close) ::shutdown(fd, SHUT_WR);
    // The server read every byte sent, so its close is a FIN after the
    // error frame, not a reset before it.
    std::optional<Frame> reply = ReadFrameRaw(fd);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->opcode, Opcode::kError);
    EXPECT_EQ(reply->arg,
              static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
    ASSERT_EQ(reply->fields.size(), 1u);
    EXPECT_THAT(reply->fields[0], HasSubstr(bad.named));
    EXPECT_TRUE(ClosedByServer(fd));
    ::close(fd);
    EXPECT_TRUE(WaitForRefused(*server, ++refused));
    ExpectWorks(*good, bad.name);
  }
  EXPECT_EQ(server->refused_connections(), refused);
}

TEST(TcpStoreTest, AnOversizedHeaderGetsAnErrorFrameNamingTheBound) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  const int fd = RawClient(server->port());
  SendRaw(fd, Header(1, 2, 1u << 30));
  std::optional<Frame> reply = ReadFrameRaw(fd);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->opcode, Opcode::kError);
  EXPECT_EQ(reply->arg,
            static_cast<uint32_t>(absl::StatusCode::kInvalidArgument));
  ASSERT_EQ(reply->fields.size(), 1u);
  EXPECT_THAT(reply->fields[0], HasSubstr("payload_bytes is 1073741824"));
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
}

TEST(TcpStoreTest, PartialFramesAndSilentConnectionsBlockNoOne) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  std::unique_ptr<TcpStoreClient> good =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(good, nullptr);
  // A slowloris: half a header, then silence.
  const int silent = RawClient(server->port());
  SendRaw(silent, EncodeFrame(Opcode::kSet, 0, {"k", "v"}).substr(0, 9));
  // A frame sent a byte at a time is served like any other.
  const int trickle = RawClient(server->port());
  const std::string set = EncodeFrame(Opcode::kSet, 0, {"trickled", "yes"});
  for (char byte : set) {
    SendRaw(trickle, std::string(1, byte));
    if (byte == set[10]) ExpectWorks(*good, "meanwhile");
  }
  std::optional<Frame> reply = ReadFrameRaw(trickle);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->opcode, Opcode::kOk);
  EXPECT_EQ(*good->Get("trickled"), "yes");
  ::close(silent);
  ::close(trickle);
}

TEST(TcpStoreTest, TheRightTokenWorksAndStrangersAreRefused) {
  StoreOptions options = LocalOptions(0, "s3cret");
  options.handshake_timeout = absl::Milliseconds(300);
  std::unique_ptr<TcpStoreServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  options.port = server->port();
  std::unique_ptr<TcpStoreClient> job = ConnectClient(options);
  ASSERT_NE(job, nullptr);
  ExpectWorks(*job, "authenticated");
  int64_t refused = 0;

  StoreOptions wrong = options;
  wrong.token = "guess";
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> stranger =
      TcpStoreClient::Connect(wrong);
  EXPECT_TRUE(absl::IsPermissionDenied(stranger.status())) << stranger.status();
  EXPECT_THAT(std::string(stranger.status().message()),
              HasSubstr("KINDLING_DIST_TOKEN"));
  EXPECT_THAT(std::string(stranger.status().message()), HasSubstr("refused"));
  EXPECT_TRUE(WaitForRefused(*server, ++refused));

  StoreOptions none = options;
  none.token = "";
  stranger = TcpStoreClient::Connect(none);
  EXPECT_TRUE(absl::IsPermissionDenied(stranger.status())) << stranger.status();
  EXPECT_THAT(std::string(stranger.status().message()),
              HasSubstr("KINDLING_DIST_TOKEN"));
  EXPECT_TRUE(WaitForRefused(*server, ++refused));

  // A raw socket that skips the handshake and sends a set.
  int fd = RawConnect(server->port());
  std::optional<Frame> hello = ReadFrameRaw(fd);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->arg, kHelloAuthRequired);
  ASSERT_EQ(hello->fields.size(), 1u);
  EXPECT_EQ(hello->fields[0].size(), kMacBytes);
  SendRaw(fd, EncodeFrame(Opcode::kSet, 0, {"owned", "yes"}));
  std::optional<Frame> reply = ReadFrameRaw(fd);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->arg,
            static_cast<uint32_t>(absl::StatusCode::kPermissionDenied));
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_TRUE(WaitForRefused(*server, ++refused));

  // A raw socket that answers nothing is dropped after handshake_timeout.
  fd = RawConnect(server->port());
  EXPECT_TRUE(ReadFrameRaw(fd).has_value());
  EXPECT_TRUE(ClosedByServer(fd));
  ::close(fd);
  EXPECT_TRUE(WaitForRefused(*server, ++refused));

  ExpectWorks(*job, "the job goes on");
  absl::Status owned = job->Wait({"owned"}, absl::Milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(owned)) << owned;
}

TEST(TcpStoreTest, ATokenOnOneSideOnlyFailsClearly) {
  std::unique_ptr<TcpStoreServer> open = StartServer(LocalOptions());
  ASSERT_NE(open, nullptr);
  StoreOptions options = LocalOptions(open->port(), "s3cret");
  options.timeout = absl::Seconds(3);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<TcpStoreClient>> client =
      TcpStoreClient::Connect(options);
  EXPECT_TRUE(absl::IsPermissionDenied(client.status())) << client.status();
  EXPECT_THAT(std::string(client.status().message()),
              HasSubstr("does not authenticate"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(TcpStoreTest, AnAbruptlyClosedNamedConnectionIsReportedLost) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpStoreClient> survivor =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(survivor, nullptr);
  ASSERT_TRUE(survivor->IdentifyAs("0").ok());
  // Rank 1 identifies itself, then its process "dies": the socket closes
  // with no goodbye.
  int fd = RawClient(server->port());
  SendRaw(fd, EncodeFrame(Opcode::kIdentify, 0, {"1"}));
  ASSERT_TRUE(ReadFrameRaw(fd).has_value());
  ::close(fd);
  absl::StatusOr<std::string> lost = survivor->Get(kLostKey);
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_EQ(*lost, "1");
  // A second loss (a reset this time) does not replace the first.
  fd = RawClient(server->port());
  SendRaw(fd, EncodeFrame(Opcode::kIdentify, 0, {"2"}));
  ASSERT_TRUE(ReadFrameRaw(fd).has_value());
  linger reset{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  ::close(fd);
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(*survivor->Get(kLostKey), "1");
}

TEST(TcpStoreTest, AnOrderlyClosedNamedClientIsNotReportedLost) {
  std::unique_ptr<TcpStoreServer> server = StartServer(LocalOptions());
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpStoreClient> observer =
      ConnectClient(LocalOptions(server->port()));
  ASSERT_NE(observer, nullptr);
  {
    std::unique_ptr<TcpStoreClient> rank =
        ConnectClient(LocalOptions(server->port()));
    ASSERT_NE(rank, nullptr);
    ASSERT_TRUE(rank->IdentifyAs("1").ok());
    ASSERT_TRUE(rank->Set("rank/1", "done").ok());
  }
  absl::Status lost = observer->Wait({kLostKey}, absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(lost)) << lost;
  EXPECT_EQ(server->refused_connections(), 0);
}

TEST(TcpStoreTest, TokenFromEnvironment) {
  ::unsetenv("KINDLING_DIST_TOKEN");
  EXPECT_EQ(TokenFromEnvironment(), "");
  ::setenv("KINDLING_DIST_TOKEN", "from env", 1);
  EXPECT_EQ(TokenFromEnvironment(), "from env");
  ::unsetenv("KINDLING_DIST_TOKEN");
}

TEST(StoreProtocolTest, FramesParseWhateverPiecesTheyArriveIn) {
  const std::string bytes =
      EncodeFrame(Opcode::kWait, 250, {"a", "", std::string(100, 'b')}) +
      EncodeFrame(Opcode::kGoodbye, 0, {});
  for (size_t piece : {1, 3, 20, 1000}) {
    FrameBuffer buffer(MaxFrameBytes(true));
    std::vector<Frame> frames;
    for (size_t at = 0; at < bytes.size(); at += piece) {
      const std::string part = bytes.substr(at, piece);
      buffer.Append(part.data(), part.size());
      while (true) {
        absl::StatusOr<std::optional<Frame>> next = buffer.Next();
        ASSERT_TRUE(next.ok()) << next.status();
        if (!next->has_value()) break;
        frames.push_back(std::move(**next));
      }
    }
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].opcode, Opcode::kWait);
    EXPECT_EQ(frames[0].arg, 250u);
    EXPECT_EQ(frames[0].fields,
              (std::vector<std::string>{"a", "", std::string(100, 'b')}));
    EXPECT_EQ(frames[1].opcode, Opcode::kGoodbye);
    EXPECT_TRUE(buffer.AtEnd().ok());
  }
}

}  // namespace
}  // namespace kindling::distributed
