// GradientSync over a fake communicator of two ranks whose other rank always
// contributes ones: buckets by size and dtype in backward's order, averages
// written back into the gradients, single-gradient buckets in place, errors
// returned by Finish(), nothing sent alone. Runs under ThreadSanitizer in
// CI (the hook and the communication thread share the queue).
#include "kindling/distributed/gradient_sync.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/reduce_math.h"
#include "kindling/tensor/tensor.h"

namespace kindling::distributed {
namespace {

// OnesPeer: a world of two in which the other rank's values are all ones.
// Records each AllReduce's buffer, element count and dtype; fails the call
// numbered fail_at (from 0) when set. Packs gradients below `pack_below`
// bytes by default (Communicator::PackBelowBytes()).
class OnesPeer : public Communicator {
 public:
  explicit OnesPeer(int world_size = 2, int64_t pack_below = kPackEverything)
      : Communicator(0, world_size, absl::Seconds(10)),
        pack_below_(pack_below) {}
  std::string backend() const override { return "ones"; }
  Device device() const override { return Device::Cpu(); }
  int64_t PackBelowBytes() const override { return pack_below_; }
  absl::Status AllReduce(void* data, int64_t count, DType dtype,
                         ReduceOp op) override {
    absl::MutexLock lock(&mutex_);
    calls_.push_back({data, count, dtype});
    if (static_cast<int>(calls_.size()) - 1 == fail_at_) {
      return absl::UnavailableError("AllReduce: rank 1 is lost");
    }
    std::vector<uint8_t> ones(count * DTypeSize(dtype));
    // Ones of the dtype, through the tensor library's conversion.
    const TensorBase filled =
        Tensor<1>::Ones({count}).base().To(dtype).Contiguous();
    if (count > 0) std::memcpy(ones.data(), filled.data(), ones.size());
    CombineElements(data, data, ones.data(), count, dtype, false);
    if (op == ReduceOp::kAverage) DivideInPlace(data, count, dtype, 2);
    return absl::OkStatus();
  }
  absl::Status Broadcast(void*, int64_t, int) override {
    return absl::OkStatus();
  }
  absl::Status AllGather(const void*, void*, int64_t) override {
    return absl::OkStatus();
  }
  absl::Status Barrier() override { return absl::OkStatus(); }

  struct Call {
    const void* data;
    int64_t count;
    DType dtype;
  };
  std::vector<Call> calls() {
    absl::MutexLock lock(&mutex_);
    return calls_;
  }
  void fail_at(int call) {
    absl::MutexLock lock(&mutex_);
    fail_at_ = call;
  }

 private:
  const int64_t pack_below_;
  absl::Mutex mutex_;
  std::vector<Call> calls_;
  int fail_at_ = -1;
};

TensorBase Filled(int64_t n, float value, DType dtype = DType::kF32) {
  return Tensor<1>::Full({n}, value).base().To(dtype).Contiguous();
}

std::vector<float> Values(const TensorBase& tensor) {
  return Tensor<1>(tensor.To(DType::kF32)).to_data<float>();
}

using Overlap = GradientSyncOptions::Overlap;

// Every case runs with the communication thread and without it.
class GradientSyncTest : public ::testing::TestWithParam<Overlap> {
 protected:
  GradientSyncOptions Options(int64_t bucket_bytes = int64_t{25} << 20,
                              int64_t pack_below_bytes = -1) {
    return {.bucket_bytes = bucket_bytes,
            .overlap = GetParam(),
            .pack_below_bytes = pack_below_bytes};
  }
};

INSTANTIATE_TEST_SUITE_P(Overlap, GradientSyncTest,
                         ::testing::Values(Overlap::kBackground,
                                           Overlap::kInline),
                         [](const auto& info) {
                           return info.param == Overlap::kBackground
                                      ? "background"
                                      : "inline";
                         });

TEST_P(GradientSyncTest, AveragesIntoTheGradientsInBucketsOfTheGivenSize) {
  OnesPeer peer;
  GradientSync sync(peer, Options(400));  // 100 f32
  std::vector<TensorBase> grads = {Filled(60, 3), Filled(60, 5), Filled(250, 7),
                                   Filled(10, 9)};
  auto hook = sync.Hook();
  for (const TensorBase& grad : grads) hook(ParamId::New(), grad);
  ASSERT_TRUE(sync.Finish().ok());
  // 60 + 60 reach 400 bytes: one bucket; 250 alone fills one; 10 is the
  // partial last bucket sent by Finish().
  const std::vector<OnesPeer::Call> calls = peer.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].count, 120);
  EXPECT_EQ(calls[1].count, 250);
  EXPECT_EQ(calls[2].count, 10);
  EXPECT_THAT(Values(grads[0]), testing::Each(2.0f));  // (3 + 1) / 2
  EXPECT_THAT(Values(grads[1]), testing::Each(3.0f));
  EXPECT_THAT(Values(grads[2]), testing::Each(4.0f));
  EXPECT_THAT(Values(grads[3]), testing::Each(5.0f));
  EXPECT_EQ(sync.stats().buckets, 3);
  EXPECT_EQ(sync.stats().steps, 1);
  EXPECT_EQ(sync.overlapping(), GetParam() == Overlap::kBackground);
}

TEST_P(GradientSyncTest, LargeGradientsAreReducedWhereTheyLie) {
  // 100 bytes: the 60- and 30-float gradients go alone, in place and in
  // the bucket's order; the 10- and 5-float ones share one call.
  OnesPeer peer;
  GradientSync sync(peer, Options(int64_t{25} << 20, 100));
  std::vector<TensorBase> grads = {Filled(10, 3), Filled(60, 5), Filled(5, 7),
                                   Filled(30, 9)};
  for (const TensorBase& grad : grads) sync.OnGradientReady(grad);
  ASSERT_TRUE(sync.Finish().ok());
  const std::vector<OnesPeer::Call> calls = peer.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].data, grads[1].data());
  EXPECT_EQ(calls[0].count, 60);
  EXPECT_EQ(calls[1].data, grads[3].data());
  EXPECT_EQ(calls[1].count, 30);
  EXPECT_NE(calls[2].data, grads[0].data());
  EXPECT_EQ(calls[2].count, 15);
  EXPECT_THAT(Values(grads[0]), testing::Each(2.0f));  // (3 + 1) / 2
  EXPECT_THAT(Values(grads[1]), testing::Each(3.0f));
  EXPECT_THAT(Values(grads[2]), testing::Each(4.0f));
  EXPECT_THAT(Values(grads[3]), testing::Each(5.0f));
  EXPECT_EQ(sync.stats().buckets, 1);
}

TEST_P(GradientSyncTest, TheEnginesPackingLimitIsTheDefault) {
  // The peer packs below 100 bytes: the 60-float gradient goes alone, and
  // the one small gradient left is reduced in place too.
  OnesPeer peer(/*world_size=*/2, /*pack_below=*/100);
  GradientSync sync(peer, Options());
  std::vector<TensorBase> grads = {Filled(60, 5), Filled(10, 3)};
  for (const TensorBase& grad : grads) sync.OnGradientReady(grad);
  ASSERT_TRUE(sync.Finish().ok());
  const std::vector<OnesPeer::Call> calls = peer.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].data, grads[0].data());
  EXPECT_EQ(calls[1].data, grads[1].data());
  EXPECT_THAT(Values(grads[0]), testing::Each(3.0f));
  EXPECT_THAT(Values(grads[1]), testing::Each(2.0f));
}

TEST_P(GradientSyncTest, ADtypeChangeClosesTheBucket) {
  OnesPeer peer;
  GradientSync sync(peer, Options());
  std::vector<TensorBase> grads = {Filled(4, 3), Filled(4, 5, DType::kBF16),
                                   Filled(4, 7, DType::kBF16),
                                   Filled(4, 9, DType::kF64)};
  for (const TensorBase& grad : grads) sync.OnGradientReady(grad);
  ASSERT_TRUE(sync.Finish().ok());
  const std::vector<OnesPeer::Call> calls = peer.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].dtype, DType::kF32);
  EXPECT_EQ(calls[1].dtype, DType::kBF16);
  EXPECT_EQ(calls[1].count, 8);
  EXPECT_EQ(calls[2].dtype, DType::kF64);
  EXPECT_THAT(Values(grads[2]), testing::Each(4.0f));
  EXPECT_THAT(Values(grads[3]), testing::Each(5.0f));
}

TEST_P(GradientSyncTest, StepsReuseTheirBuffersAndKeepTheOrder) {
  OnesPeer peer;
  GradientSync sync(peer, Options(64));
  for (int step = 0; step < 20; ++step) {
    std::vector<TensorBase> grads;
    for (int i = 0; i < 6; ++i) grads.push_back(Filled(8 + i, 2 * i + 1));
    for (const TensorBase& grad : grads) sync.OnGradientReady(grad);
    ASSERT_TRUE(sync.Finish().ok());
    for (int i = 0; i < 6; ++i) {
      EXPECT_THAT(Values(grads[i]), testing::Each(static_cast<float>(i + 1)));
    }
  }
  EXPECT_EQ(sync.stats().steps, 20);
}

TEST_P(GradientSyncTest, FinishReturnsTheCommunicatorsError) {
  OnesPeer peer;
  peer.fail_at(1);
  GradientSync sync(peer, Options(4));
  for (int i = 0; i < 4; ++i) sync.OnGradientReady(Filled(4, 1));
  const absl::Status status = sync.Finish();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(std::string(status.message()), testing::HasSubstr("rank 1"));
  // The buckets after the failed one are not sent.
  EXPECT_EQ(peer.calls().size(), 2u);
}

TEST_P(GradientSyncTest, AGradientOnAnotherDeviceOrLayoutIsAnError) {
  OnesPeer peer;
  GradientSync sync(peer, Options());
  const TensorBase matrix = Tensor<2>::Ones({3, 4}).base();
  sync.OnGradientReady(matrix.Transpose(0, 1));
  const absl::Status status = sync.Finish();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              testing::HasSubstr("not contiguous"));
}

TEST_P(GradientSyncTest, AloneNothingIsSent) {
  OnesPeer alone(/*world_size=*/1);
  GradientSync sync(alone, Options());
  const TensorBase grad = Filled(5, 3);
  sync.OnGradientReady(grad);
  ASSERT_TRUE(sync.Finish().ok());
  EXPECT_TRUE(alone.calls().empty());
  EXPECT_THAT(Values(grad), testing::Each(3.0f));
}

}  // namespace
}  // namespace kindling::distributed
