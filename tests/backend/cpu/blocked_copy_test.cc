// backend/cpu/blocked_copy.h and the Storage layout copy under it:
// - BlockSample()/UnblockSample() against the layout's index formula, with
//   plane sizes off the eight-wide transposes, for blocks of 8 and 16;
// - bytes of a tensor left unwritten for its blocked copy are written from
//   it by the first read, an in-place writer's included, and a view of part
//   of a storage is never left unwritten (the storage's own layout copy:
//   //tests/tensor:storage_layout_copy_test);
// - the example CNN's two convolutions run as it chains them (Kindling's
//   conv1 pooled, then oneDNN's or winograd_conv3x3.h's conv2 pooled, and
//   both backwards), with blocked copies on against off: every output and
//   gradient bit for bit the same, and with them on, conv2's input written
//   only in the blocked layout, its reorders in both directions skipped
//   (the input's gradient left unwritten; on AVX2, where the layouts were
//   measured), and nothing kept without grad mode.
#include "kindling/backend/cpu/blocked_copy.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"
#include "tests/support/cpu_tensors.h"

namespace kindling::cpu {
namespace {

using test_support::Empty;
using test_support::ExpectSameBits;
using test_support::FromFloats;
using test_support::RandomFloats;
using test_support::Values;

TEST(BlockSampleTest, FollowsTheLayoutBothWays) {
  for (int64_t block : {8, 16}) {
    for (int64_t plane : {1, 7, 8, 196, 203}) {
      const int64_t channels = 2 * block;
      const std::vector<float> nchw = RandomFloats(channels * plane, 1);
      std::vector<float> blocked(nchw.size()), back(nchw.size());
      BlockSample(nchw.data(), channels, plane, block, blocked.data());
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t p = 0; p < plane; ++p) {
          ASSERT_EQ(blocked[(c / block * plane + p) * block + c % block],
                    nchw[c * plane + p])
              << "block " << block << " plane " << plane << " c " << c << " p "
              << p;
        }
      }
      UnblockSample(blocked.data(), channels, plane, block, back.data());
      EXPECT_EQ(back, nchw) << "block " << block << " plane " << plane;
    }
  }
}

TEST(BlockedCopyTest, UnwrittenBytesAreWrittenByTheFirstRead) {
  const std::vector<float> values = RandomFloats(2 * 16 * 3 * 5, 2);
  for (const bool write_in_place : {false, true}) {
    const TensorBase tensor = Empty({2, 16, 3, 5});
    ASSERT_TRUE(CanLeaveUnwritten(tensor));
    std::shared_ptr<Storage> copy = NewBlockedCopy(tensor);
    for (int n = 0; n < 2; ++n) {
      BlockSample(values.data() + n * 240, 16, 15, 8,
                  static_cast<float*>(copy->data()) + n * 240);
    }
    const float* kept = static_cast<const float*>(copy->data());
    KeepBlockedCopyOnly(tensor, 8, std::move(copy));
    EXPECT_FALSE(tensor.storage()->is_written());
    EXPECT_EQ(FindBlockedCopy(tensor, 8), kept);
    EXPECT_EQ(FindBlockedCopy(tensor, 16), nullptr);
    EXPECT_FALSE(tensor.storage()->is_written()) << "finding reads nothing";
    if (write_in_place) {
      TensorBase writer = tensor;
      writer.MakeWritable();  // bumps the version before it asks for data()
      writer.data_as<float>()[0] = 42;
      std::vector<float> expected = values;
      expected[0] = 42;
      EXPECT_EQ(Values<float>(tensor), expected);
      EXPECT_EQ(FindBlockedCopy(tensor, 8), nullptr) << "stale after a write";
    } else {
      EXPECT_EQ(Values<float>(tensor), values);
      EXPECT_EQ(FindBlockedCopy(tensor, 8), kept) << "still current";
    }
    EXPECT_TRUE(tensor.storage()->is_written());
  }
}

TEST(BlockedCopyTest, ViewsOfPartOfAStorageAreNeverLeftUnwritten) {
  const TensorBase whole = Empty({2, 8, 2, 2});
  const TensorBase part(whole.storage(), DType::kF32, {1, 8, 2, 2},
                        {32, 4, 2, 1}, 32);
  EXPECT_FALSE(CanLeaveUnwritten(part));
  EXPECT_FALSE(CanLeaveUnwritten(Empty({2, 8, 2, 2}, DType::kF64)));
  EXPECT_TRUE(CanLeaveUnwritten(whole));
}

// The example CNN's convolutions, pooled with ReLU, at batch 8.
constexpr Window2dGeometry kConv{.kernel = {3, 3}, .padding = {1, 1}};
constexpr Window2dGeometry kPool{.kernel = {2, 2}, .stride = {2, 2}};
constexpr int64_t kBatch = 8;

// Chain: one forward and backward of conv1 (1 -> 32, 28 x 28) and conv2
// (32 -> 64, 14 x 14), each pooled, as the backend runs them.
struct Chain {
  TensorBase images =
      FromFloats(RandomFloats(kBatch * 28 * 28, 3), {kBatch, 1, 28, 28});
  TensorBase w1 = FromFloats(RandomFloats(32 * 9, 4), {32, 1, 3, 3});
  TensorBase b1 = FromFloats(RandomFloats(32, 5), {32});
  TensorBase w2 = FromFloats(RandomFloats(64 * 32 * 9, 6), {64, 32, 3, 3});
  TensorBase b2 = FromFloats(RandomFloats(64, 7), {64});
  TensorBase grad2 =
      FromFloats(RandomFloats(kBatch * 64 * 7 * 7, 8), {kBatch, 64, 7, 7});

  TensorBase out1 = Empty({kBatch, 32, 14, 14});
  TensorBase argmax1 = Empty({kBatch, 32, 14, 14}, DType::kU8);
  TensorBase out2 = Empty({kBatch, 64, 7, 7});
  TensorBase argmax2 = Empty({kBatch, 64, 7, 7}, DType::kU8);
  TensorBase grad1 = Empty({kBatch, 32, 14, 14});  // conv2's input's
  TensorBase w2_grad = Empty({64, 32, 3, 3});
  TensorBase b2_grad = Empty({64});
  TensorBase w1_grad = Empty({32, 1, 3, 3});
  TensorBase b1_grad = Empty({32});

  void Forward() {
    Backend& cpu = GetBackend(Device::Cpu());
    ASSERT_TRUE(cpu.Conv2dMaxPool(out1, argmax1, images, w1, b1, kConv, kPool,
                                  PoolActivation::kRelu));
    ASSERT_TRUE(cpu.Conv2dMaxPool(out2, argmax2, out1, w2, b2, kConv, kPool,
                                  PoolActivation::kRelu));
  }

  void Backward() {
    Backend& cpu = GetBackend(Device::Cpu());
    ASSERT_TRUE(cpu.Conv2dMaxPoolBackward(grad1, w2_grad, b2_grad, grad2,
                                          argmax2, out1, w2, kConv, kPool));
    ASSERT_TRUE(cpu.Conv2dMaxPoolBackward(TensorBase(), w1_grad, b1_grad, grad1,
                                          argmax1, images, TensorBase(), kConv,
                                          kPool));
  }

  // ExpectSameResults() compares every output and gradient with `other`'s
  // bit for bit.
  void ExpectSameResults(const Chain& other) const {
    ExpectSameBits(out1, other.out1, "conv1's pooled output");
    ExpectSameBits(out2, other.out2, "conv2's pooled output");
    ExpectSameBits(grad1, other.grad1, "conv2's input gradient");
    ExpectSameBits(w2_grad, other.w2_grad, "conv2's weight gradient");
    ExpectSameBits(b2_grad, other.b2_grad, "conv2's bias gradient");
    ExpectSameBits(w1_grad, other.w1_grad, "conv1's weight gradient");
    ExpectSameBits(b1_grad, other.b1_grad, "conv1's bias gradient");
  }
};

TEST(BlockedChainTest, SameBitsAndNoReorderBetweenTheLayers) {
  SetBlockedCopies(false);
  Chain off;
  off.Forward();
  off.Backward();
  EXPECT_TRUE(off.out1.storage()->is_written());
  EXPECT_TRUE(off.grad1.storage()->is_written());

  SetBlockedCopies(true);
  // The first step tells each layer which layout the next one reads.
  Chain first;
  first.Forward();
  first.Backward();
  const int64_t block = BlockedOf(BlockedUse::kInput, first.out1.shape());
  ASSERT_TRUE(block == 8 || block == 16)
      << "conv2 should read its input in oneDNN's nChw8c or nChw16c; block "
      << block;
  EXPECT_EQ(BlockedOf(BlockedUse::kGradient, first.out1.shape()), block);

  Chain chained;
  chained.Forward();
  EXPECT_FALSE(chained.out1.storage()->is_written())
      << "conv1 should write conv2's input in the blocked layout only";
  EXPECT_NE(FindBlockedCopy(chained.out1, block), nullptr);
  chained.Backward();
  // On AVX2 (nChw8c, winograd_conv3x3.h) every primitive of conv2 reads and
  // writes that layout; on AVX-512 (nChw16c) oneDNN's backward picks its
  // own, which was not measured here: there only the results are checked.
  if (block == 8) {
    EXPECT_FALSE(chained.out1.storage()->is_written())
        << "conv2's backward should read the blocked input";
    EXPECT_FALSE(chained.grad1.storage()->is_written())
        << "conv1's backward should read the blocked gradient";
  }
  chained.ExpectSameResults(off);  // reading writes the bytes
  first.ExpectSameResults(off);
}

TEST(BlockedChainTest, NothingIsKeptWithoutGradMode) {
  SetBlockedCopies(true);
  Chain learn;  // as in training: the layers learn the layouts
  learn.Forward();
  learn.Backward();
  NoGradGuard no_grad;
  Chain inference;
  inference.Forward();
  EXPECT_TRUE(inference.out1.storage()->is_written());
  for (int64_t block : {8, 16}) {
    EXPECT_EQ(FindBlockedCopy(inference.out1, block), nullptr);
  }
}

}  // namespace
}  // namespace kindling::cpu
