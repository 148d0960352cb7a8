// nn/flop_count.h against counts worked out by hand.
#include "kindling/nn/flop_count.h"

#include "gtest/gtest.h"
#include "kindling/nn/attention.h"
#include "kindling/nn/conv2d.h"
#include "kindling/nn/linear.h"
#include "kindling/nn/transformer.h"

namespace kindling::nn {
namespace {

TEST(FlopCountTest, LinearCountsTheWeightsGradientAndTheInputsIfNeeded) {
  const Linear layer = LinearConfig{3, 4}.Init();
  // [2, 3] x [3, 4]: 24 multiply-adds.
  const Flops first = LinearFlops(layer, 2, InputGradient::kNotNeeded);
  EXPECT_EQ(first.forward, 48);
  EXPECT_EQ(first.backward, 48);
  const Flops inner = LinearFlops(layer, 2, InputGradient::kNeeded);
  EXPECT_EQ(inner.forward, 48);
  EXPECT_EQ(inner.backward, 96);
  EXPECT_EQ(inner.total(), 144);
}

TEST(FlopCountTest, CountingReadsShapesWithoutInitializingAnything) {
  const Linear layer = LinearConfig{1000, 1000}.Init();
  LinearFlops(layer, 1, InputGradient::kNeeded);
  EXPECT_FALSE(layer.weight.is_initialized());
}

TEST(FlopCountTest, Conv2dCountsEveryOutputPositionOfTheWindow) {
  // 2 -> 3 channels, 3x3 kernel, stride 2, padding 1 over 5 x 6: outputs
  // 3 x 3 per image; each is 2 * 9 = 18 multiply-adds per out channel.
  const Conv2d layer = Conv2dConfig{
      .in_channels = 2,
      .out_channels = 3,
      .kernel_size = {3, 3},
      .stride = {2, 2},
      .padding = {1, 1}}.Init();
  const Flops flops = Conv2dFlops(layer, 4, {5, 6}, InputGradient::kNeeded);
  // 4 images x 9 positions x 18 x 3 channels = 1944 multiply-adds.
  EXPECT_EQ(flops.forward, 3888);
  EXPECT_EQ(flops.backward, 7776);
}

TEST(FlopCountTest, CausalAttentionCountsOnlyTheKeptPairs) {
  // 3 queries over 3 keys: 9 pairs, 1 + 2 + 3 = 6 kept; head_dim 4, two
  // products (Q K^T, P V) of one multiply-add per pair and channel.
  const Flops full = AttentionFlops(1, 1, 3, 3, 4, /*causal=*/false);
  EXPECT_EQ(full.forward, 2 * 2 * 9 * 4);
  EXPECT_EQ(full.backward, 2 * full.forward);
  const Flops causal = AttentionFlops(2, 3, 3, 3, 4, /*causal=*/true);
  EXPECT_EQ(causal.forward, 2 * 3 * 2 * 2 * 6 * 4);
  // More keys than queries: each query sees at most all keys.
  EXPECT_EQ(AttentionFlops(1, 1, 3, 2, 1, true).forward, 2 * 2 * (1 + 2 + 2));
}

TEST(FlopCountTest, TransformerLayerSumsItsProjectionsAndAttention) {
  // d_model 8, 2 heads of 4, feed-forward 16, batch 2 x length 3 (6 rows).
  const TransformerEncoderLayer layer =
      TransformerEncoderLayerConfig{8, 2, 16, 0}.Init();
  const Flops flops = TransformerEncoderLayerFlops(layer, 2, 3, true);
  // Projections: in 6x8x24, out 6x8x8, linear1 6x8x16, linear2 6x16x8:
  // 1152 + 384 + 768 + 768 = 3072 multiply-adds. Attention: 2 sequences x
  // 2 heads x 6 kept pairs x 4 channels x 2 products = 192.
  EXPECT_EQ(flops.forward, 2 * (3072 + 192));
  EXPECT_EQ(flops.backward, 2 * 2 * (3072 + 192));
}

}  // namespace
}  // namespace kindling::nn
