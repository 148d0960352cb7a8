// The NCCL communicator on GPU tensors: one rank on cuda:0 (every collective,
// the refused calls, a deadline), and two ranks as two threads when two GPUs
// are visible. The GPU cases skip, saying why, only when no GPU is visible
// (tests/backend/cuda/gpu_test_support.h); the argument checks of
// ConnectNccl() run on any machine.
#include "kindling/distributed/nccl_communicator.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/communicator.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/gpu_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::distributed {
namespace {

NcclOptions OneRankOptions() {
  NcclOptions options;
  options.rank = 0;
  options.world_size = 1;
  options.device_index = 0;
  options.store.host = "127.0.0.1";
  options.store.port = 0;  // the store picks a free port
  options.store.timeout = absl::Seconds(60);
  options.timeout = absl::Seconds(60);
  return options;
}

// --- Values
// -------------------------------------------------------------------

// SmallValue() is rank `rank`'s element `i`: a small integer, negative for
// some elements, that f16 and bf16 hold and add exactly.
int64_t SmallValue(int rank, int64_t i) {
  return (rank % 3 + 1) * (i % 11) - 5 - (rank % 2) * (i % 3);
}

// Contribution() is what rank `rank` puts at element `i`. Integers also carry
// 2^53 + 1 on odd elements, which a double does not hold: an i64 reduction
// through floating point fails.
template <class T>
int64_t Contribution(int rank, int64_t i) {
  const int64_t small = SmallValue(rank, i);
  if constexpr (std::is_same_v<T, int64_t>) {
    return small + (i % 2) * ((int64_t{1} << 53) + 1);
  }
  return small;
}

template <class T>
T FromInteger(int64_t v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T::FromFloat(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Expected() is the host's reduction of element i over the ranks. The worlds
// here have 1 or 2 ranks, so a float average (NCCL scales each value by 1/n)
// is exact too: every value is an integer or a half-integer.
template <class T>
double Expected(int world_size, int64_t i, ReduceOp op) {
  int64_t sum = 0;
  int64_t max = Contribution<T>(0, i);
  for (int r = 0; r < world_size; ++r) {
    sum += Contribution<T>(r, i);
    max = std::max(max, Contribution<T>(r, i));
  }
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<double>(sum);
    case ReduceOp::kMax:
      return static_cast<double>(max);
    case ReduceOp::kAverage:
      if constexpr (std::is_same_v<T, int64_t>) {
        return static_cast<double>(sum / world_size);  // toward zero
      }
      return static_cast<double>(sum) / world_size;
  }
  return 0;
}

// --- Checks (any rank of any world)
// --------------------------------------------

// CheckAllReduce() reduces `count` elements of a GPU tensor and compares
// every element with the host's reduction.
template <class T>
absl::Status CheckAllReduce(Communicator& comm, ReduceOp op, int64_t count) {
  const DType dtype = DTypeOf<T>;
  std::vector<T> host(count);
  for (int64_t i = 0; i < count; ++i) {
    host[i] = FromInteger<T>(Contribution<T>(comm.rank(), i));
  }
  TensorBase tensor =
      TensorBase::FromHost(host.data(), Shape{count}, dtype, comm.device());
  KINDLING_RETURN_IF_ERROR(comm.AllReduce(tensor, op));
  std::vector<T> got(count);
  tensor.CopyToHost(got.data());
  for (int64_t i = 0; i < count; ++i) {
    const double want = Expected<T>(comm.world_size(), i, op);
    bool equal;
    double value;
    if constexpr (std::is_same_v<T, int64_t>) {
      // Compared as integers: 2^54 + 3 and 2^54 + 2 are one double.
      int64_t exact = 0;
      for (int r = 0; r < comm.world_size(); ++r) {
        const int64_t v = Contribution<T>(r, i);
        exact = op == ReduceOp::kMax ? (r == 0 ? v : std::max(exact, v))
                                     : exact + v;
      }
      if (op == ReduceOp::kAverage) exact /= comm.world_size();
      equal = got[i] == exact;
      value = static_cast<double>(got[i]);
    } else if constexpr (std::is_same_v<T, Half> ||
                         std::is_same_v<T, BFloat16>) {
      value = got[i].ToFloat();
      equal = value == want;
    } else {
      value = static_cast<double>(got[i]);
      equal = value == want;
    }
    if (!equal) {
      return absl::InternalError(absl::StrFormat(
          "AllReduce %s %s n=%d on rank %d: element %d is %.17g, want %.17g",
          ReduceOpName(op), std::string(DTypeName(dtype)), count, comm.rank(),
          i, value, want));
    }
  }
  return absl::OkStatus();
}

constexpr int64_t kCounts[] = {0, 1, 7, 1000003};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage,
                             ReduceOp::kMax};

template <class T>
absl::Status CheckAllReduces(Communicator& comm) {
  for (ReduceOp op : kOps) {
    for (int64_t count : kCounts) {
      KINDLING_RETURN_IF_ERROR(CheckAllReduce<T>(comm, op, count));
    }
  }
  return absl::OkStatus();
}

uint8_t Pattern(int rank, int64_t i) {
  return static_cast<uint8_t>((i * 7 + rank * 31 + (i >> 8)) & 0xff);
}

// CheckBroadcast(): `bytes` bytes from `root` land on every rank.
absl::Status CheckBroadcast(Communicator& comm, int root, int64_t bytes) {
  std::vector<uint8_t> host(bytes, 0);
  if (comm.rank() == root) {
    for (int64_t i = 0; i < bytes; ++i) host[i] = Pattern(root, i);
  }
  TensorBase tensor = TensorBase::FromHost(host.data(), Shape{bytes},
                                           DType::kU8, comm.device());
  KINDLING_RETURN_IF_ERROR(comm.Broadcast(tensor, root));
  tensor.CopyToHost(host.data());
  for (int64_t i = 0; i < bytes; ++i) {
    if (host[i] != Pattern(root, i)) {
      return absl::InternalError(absl::StrFormat(
          "Broadcast from %d on rank %d: byte %d is %d, want %d", root,
          comm.rank(), i, host[i], Pattern(root, i)));
    }
  }
  return absl::OkStatus();
}

// CheckAllGather(): every rank's 1001 floats, in rank order, on every rank.
absl::Status CheckAllGather(Communicator& comm) {
  constexpr int64_t kEach = 1001;
  const int n = comm.world_size();
  std::vector<float> mine(kEach);
  for (int64_t i = 0; i < kEach; ++i) mine[i] = 1000.0f * comm.rank() + i;
  TensorBase in = TensorBase::FromHost(mine.data(), Shape{kEach}, DType::kF32,
                                       comm.device());
  TensorBase out =
      TensorBase::Empty(Shape{n, kEach}, DType::kF32, comm.device());
  KINDLING_RETURN_IF_ERROR(comm.AllGather(in, out));
  std::vector<float> got(n * kEach);
  out.CopyToHost(got.data());
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < kEach; ++i) {
      if (got[r * kEach + i] != 1000.0f * r + i) {
        return absl::InternalError(absl::StrFormat(
            "AllGather on rank %d: rank %d's element %d is %g, want %g",
            comm.rank(), r, i, got[r * kEach + i], 1000.0f * r + i));
      }
    }
  }
  return absl::OkStatus();
}

// CheckOrderedAfterKernels(): the collective runs on the current stream
// after the kernels queued there. A slow kernel writes the input and the
// AllReduce is called without waiting for it: on another stream it would
// read the bytes from before the kernel.
absl::Status CheckOrderedAfterKernels(Communicator& comm) {
  constexpr int64_t kCount = 4097;
  const int index = comm.device().index();
  std::vector<float> zeros(kCount, 0.0f);
  TensorBase tensor = TensorBase::FromHost(zeros.data(), Shape{kCount},
                                           DType::kF32, comm.device());
  {
    cuda::CudaDeviceGuard device(index);
    const cudaStream_t stream = cuda::CurrentCudaStream(index);
    cuda::testing::LaunchSpin(20'000'000, stream);  // 20 ms
    cuda::testing::LaunchIota(tensor.data_as<float>(), kCount, 1.0f, stream);
  }
  KINDLING_RETURN_IF_ERROR(comm.AllReduce(tensor, ReduceOp::kSum));
  std::vector<float> got(kCount);
  tensor.CopyToHost(got.data());
  for (int64_t i = 0; i < kCount; ++i) {
    const float want = static_cast<float>(comm.world_size()) * (1.0f + i);
    if (got[i] != want) {
      return absl::InternalError(absl::StrFormat(
          "AllReduce after a kernel on rank %d: element %d is %g, want %g",
          comm.rank(), i, got[i], want));
    }
  }
  return absl::OkStatus();
}

// CheckEverything() is every check above, in the same order on every rank.
absl::Status CheckEverything(Communicator& comm) {
  KINDLING_RETURN_IF_ERROR(CheckAllReduces<float>(comm));
  KINDLING_RETURN_IF_ERROR(CheckAllReduces<double>(comm));
  KINDLING_RETURN_IF_ERROR(CheckAllReduces<Half>(comm));
  KINDLING_RETURN_IF_ERROR(CheckAllReduces<BFloat16>(comm));
  KINDLING_RETURN_IF_ERROR(CheckAllReduces<int64_t>(comm));
  for (int root = 0; root < comm.world_size(); ++root) {
    KINDLING_RETURN_IF_ERROR(CheckBroadcast(comm, root, 1000003));
  }
  KINDLING_RETURN_IF_ERROR(CheckAllGather(comm));
  KINDLING_RETURN_IF_ERROR(CheckOrderedAfterKernels(comm));
  return comm.Barrier();
}

// --- ConnectNccl()'s checks (any machine)
// ---------------------------------------

TEST(ConnectNccl, RefusesARankOutsideTheWorld) {
  NcclOptions options = OneRankOptions();
  options.rank = 2;
  options.world_size = 2;
  absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectNccl(options);
  EXPECT_TRUE(absl::IsInvalidArgument(comm.status())) << comm.status();
  EXPECT_TRUE(absl::StrContains(comm.status().message(), "rank 2"))
      << comm.status();
  options.rank = 0;
  options.world_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(ConnectNccl(options).status()));
}

// One device past the visible ones: refused, naming it, on a GPU machine;
// on a machine without a GPU, CUDA's reason (and no store is started).
TEST(ConnectNccl, RefusesADeviceItCannotUse) {
  NcclOptions options = OneRankOptions();
  options.device_index = cuda::CudaDeviceCount();
  absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectNccl(options);
  ASSERT_FALSE(comm.ok());
  EXPECT_TRUE(absl::StrContains(comm.status().message(),
                                absl::StrCat("cuda:", options.device_index)))
      << comm.status();
  if (cuda::CudaAvailability().ok()) {
    EXPECT_TRUE(absl::IsInvalidArgument(comm.status())) << comm.status();
  } else {
    EXPECT_TRUE(absl::IsFailedPrecondition(comm.status())) << comm.status();
    EXPECT_TRUE(absl::StrContains(comm.status().message(),
                                  cuda::CudaAvailability().message()))
        << comm.status();
  }
}

// --- One rank on cuda:0
// ----------------------------------------------------------

class NcclOneRank : public testing::Test {
 protected:
  void SetUp() override {
    KINDLING_NEED_CUDA_DEVICES(1);
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        ConnectNccl(OneRankOptions());
    ASSERT_TRUE(comm.ok()) << comm.status();
    comm_ = *std::move(comm);
  }

  std::unique_ptr<Communicator> comm_;
};

TEST_F(NcclOneRank, SaysWhatItIs) {
  EXPECT_EQ(comm_->backend(), "nccl");
  EXPECT_EQ(comm_->device(), Device::Cuda(0));
  EXPECT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->world_size(), 1);
}

template <class T>
class NcclOneRankAllReduce : public NcclOneRank {};

using ReducibleTypes = testing::Types<float, double, Half, BFloat16, int64_t>;
TYPED_TEST_SUITE(NcclOneRankAllReduce, ReducibleTypes);

// Sum, average and max of 0, 1, 7 and 1000003 elements.
TYPED_TEST(NcclOneRankAllReduce, MatchesTheHost) {
  const absl::Status status = CheckAllReduces<TypeParam>(*this->comm_);
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(NcclOneRank, ZeroElementsCallNothing) {
  // A null buffer would fault in NCCL: count 0 must not reach it.
  EXPECT_TRUE(comm_->AllReduce(nullptr, 0, DType::kF32, ReduceOp::kSum).ok());
  EXPECT_TRUE(comm_->Broadcast(nullptr, 0, 0).ok());
  EXPECT_TRUE(comm_->AllGather(nullptr, nullptr, 0).ok());
}

TEST_F(NcclOneRank, BroadcastAllGatherBarrier) {
  absl::Status status = CheckBroadcast(*comm_, 0, 1000003);
  EXPECT_TRUE(status.ok()) << status;
  status = CheckAllGather(*comm_);
  EXPECT_TRUE(status.ok()) << status;
  status = comm_->Barrier();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(NcclOneRank, RunsAfterTheKernelsOnTheCurrentStream) {
  const absl::Status status = CheckOrderedAfterKernels(*comm_);
  EXPECT_TRUE(status.ok()) << status;
}

// The mixed CPU/GPU check: a host tensor given to the GPU communicator is
// refused, naming both devices, before anything reaches NCCL (which would
// fault on a host pointer).
TEST_F(NcclOneRank, RefusesCpuTensorsNamingTheDevices) {
  std::vector<float> values(6, 1.0f);
  TensorBase cpu =
      TensorBase::FromHost(values.data(), Shape{6}, DType::kF32, Device::Cpu());
  TensorBase gpu = TensorBase::FromHost(values.data(), Shape{6}, DType::kF32,
                                        Device::Cuda(0));
  for (const absl::Status& status :
       {comm_->AllReduce(cpu, ReduceOp::kSum), comm_->Broadcast(cpu, 0),
        comm_->AllGather(cpu, gpu), comm_->AllGather(gpu, cpu)}) {
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "cpu")) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "cuda:0")) << status;
  }
  // Nothing was sent, so the communicator still works.
  const absl::Status status = comm_->Barrier();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(NcclOneRank, RefusesBadArgumentsWithoutBreaking) {
  std::vector<uint8_t> bytes(4, 0);
  TensorBase u8 =
      TensorBase::FromHost(bytes.data(), Shape{4}, DType::kU8, Device::Cuda(0));
  absl::Status status = comm_->AllReduce(u8, ReduceOp::kSum);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "u8")) << status;
  status = comm_->Broadcast(u8, 1);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "root")) << status;
  status = comm_->Barrier();
  EXPECT_TRUE(status.ok()) << status;
}

// A collective that cannot finish in time (here the stream is busy for two
// seconds, the timeout is 300 ms) is DeadlineExceeded naming it, and every
// later call is refused at once.
TEST(NcclDeadline, BreaksTheCommunicator) {
  KINDLING_NEED_CUDA_DEVICES(1);
  NcclOptions options = OneRankOptions();
  options.timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectNccl(options);
  ASSERT_TRUE(comm.ok()) << comm.status();
  std::vector<float> values(1000, 1.0f);
  TensorBase tensor = TensorBase::FromHost(values.data(), Shape{1000},
                                           DType::kF32, Device::Cuda(0));
  {
    cuda::CudaDeviceGuard device(0);
    cuda::testing::LaunchSpin(2'000'000'000, cuda::CurrentCudaStream(0));
  }
  const absl::Time start = absl::Now();
  absl::Status status = (*comm)->AllReduce(tensor, ReduceOp::kSum);
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "AllReduce")) << status;
  // Not earlier than the timeout. (How much later depends on how long
  // ncclCommAbort() takes next to a kernel it cannot stop.)
  EXPECT_GE(took, absl::Milliseconds(300));
  status = (*comm)->Barrier();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "broken")) << status;
  comm->reset();
  EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
}

// --- Two ranks, one GPU each, as two threads
// -------------------------------------

// FreePort() is a port nothing listens on now. Rank 1 must know the store's
// port before rank 0's ConnectNccl() returns (it waits for rank 1), so the
// store cannot pick one itself here; another process taking the port in
// between is unlikely on a test machine.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

TEST(NcclTwoRanks, ReduceOverRanks) {
  KINDLING_NEED_CUDA_DEVICES(2);
  const int port = FreePort();
  ASSERT_NE(port, 0);
  absl::Status results[2];
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([rank, port, &results] {
      NcclOptions options = OneRankOptions();
      options.rank = rank;
      options.world_size = 2;
      options.device_index = rank;
      options.store.port = port;
      absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectNccl(options);
      if (!comm.ok()) {
        results[rank] = comm.status();
        return;
      }
      results[rank] = CheckEverything(**comm);
    });
  }
  for (std::thread& thread : ranks) thread.join();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(results[rank].ok()) << "rank " << rank << ": " << results[rank];
  }
}

}  // namespace
}  // namespace kindling::distributed
