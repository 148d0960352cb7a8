// The sequence layers (MultiHeadAttention and its fused kernel,
// TransformerEncoderLayer, RmsNorm, GroupNorm, Conv1d, positional and rotary
// encodings) against Debian's PyTorch 1.13 on the same weights and inputs
// (make_torch_attention_reference.py wrote testdata/), against finite
// differences in f64, and on bad input.
#include "kindling/nn/attention.h"

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/io/module_file.h"
#include "kindling/io/tensor_file.h"
#include "kindling/nn/attention.kindling.h"
#include "kindling/nn/conv1d.kindling.h"
#include "kindling/nn/fused_attention.h"
#include "kindling/nn/group_norm.kindling.h"
#include "kindling/nn/positional.kindling.h"
#include "kindling/nn/rms_norm.kindling.h"
#include "kindling/nn/rotary.h"
#include "kindling/nn/transformer.kindling.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling::nn {
namespace {

constexpr char kData[] = "tests/nn/testdata/";

// AsParam() wraps a gradcheck input as a layer's parameter, keeping its leaf
// id so that its gradient is reported where Gradcheck looks (a perturbed
// input, which needs no grad, gets a fresh id).
template <int D>
Param<Tensor<D>> AsParam(const TensorBase& value) {
  const ParamId id = value.is_require_grad() ? value.leaf_id() : ParamId::New();
  return Param<Tensor<D>>::Initialized(id, Tensor<D>(value));
}

// Read() is tensor `key` of testdata/torch_attention_io.safetensors.
template <int D, TensorKind K = Float>
Tensor<D, K> Read(const std::string& key) {
  auto file = io::TensorFile::Open(std::string(kData) +
                                   "torch_attention_io.safetensors");
  EXPECT_TRUE(file.ok()) << file.status();
  const auto* info = (*file)->header().Find(key);
  EXPECT_NE(nullptr, info) << key;
  auto tensor = io::ReadTensor(*file, *info, K::kDefaultDType, Device::Cpu());
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  return Tensor<D, K>(*tensor);
}

template <int D>
void ExpectNear(const Tensor<D>& want, const Tensor<D>& got,
                const std::string& what, double tolerance = 2e-5) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  const std::vector<float> w = want.template to_data<float>();
  const std::vector<float> g = got.template to_data<float>();
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_NEAR(w[i], g[i], tolerance * (1 + std::fabs(w[i])))
        << what << " element " << i;
  }
}

// TorchAttention() is the reference MultiheadAttention(8, 2), loaded from
// its state_dict through the PyTorch adapter.
MultiHeadAttention TorchAttention() {
  MultiHeadAttention attention =
      MultiHeadAttentionConfig{.d_model = 8, .num_heads = 2}.Init();
  LoadOptions options;
  options.pytorch = PyTorchAdapter{};
  const auto report = LoadModule(
      attention, std::string(kData) + "torch_mha.safetensors", options);
  EXPECT_TRUE(report.ok()) << report.status();
  return attention;
}

TEST(MultiHeadAttentionTest, CausalSelfAttentionWithPaddingMatchesTorch) {
  const MultiHeadAttention attention = TorchAttention();
  const Tensor<3> x = Read<3>("self.x").set_require_grad(true);
  const Tensor<3> y = attention.Forward(
      x, {.causal = true, .key_padding_mask = Read<2, Bool>("self.padding")});
  ExpectNear(Read<3>("self.y"), y, "output");
  const Gradients grads = Backward((y * Read<3>("self.r")).sum());
  ExpectNear(Read<3>("self.grad.x"), *grads.Get(x), "grad x");
  ExpectNear(Read<2>("self.grad.in_proj_weight"),
             *grads.Get(attention.in_proj_weight), "grad in_proj_weight");
  ExpectNear(Read<1>("self.grad.in_proj_bias"),
             *grads.Get(attention.in_proj_bias), "grad in_proj_bias");
  // Kindling's Linear keeps [in, out]: torch's out_proj.weight transposed.
  ExpectNear(Read<2>("self.grad.out_proj.weight").t().contiguous(),
             grads.Get(attention.out_proj.weight)->contiguous(),
             "grad out_proj.weight");
  ExpectNear(Read<1>("self.grad.out_proj.bias"),
             *grads.Get(*attention.out_proj.bias), "grad out_proj.bias");
}

TEST(MultiHeadAttentionTest, CrossAttentionMatchesTorch) {
  const MultiHeadAttention attention = TorchAttention();
  const Tensor<3> q = Read<3>("cross.q").set_require_grad(true);
  const Tensor<3> k = Read<3>("cross.k").set_require_grad(true);
  const Tensor<3> v = Read<3>("cross.v").set_require_grad(true);
  const Tensor<3> y = attention.Forward(q, k, v);
  ExpectNear(Read<3>("cross.y"), y, "output");
  const Gradients grads = Backward((y * Read<3>("cross.r")).sum());
  ExpectNear(Read<3>("cross.grad.q"), *grads.Get(q), "grad q");
  ExpectNear(Read<3>("cross.grad.k"), *grads.Get(k), "grad k");
  ExpectNear(Read<3>("cross.grad.v"), *grads.Get(v), "grad v");
}

TEST(MultiHeadAttentionTest, GradientsMatchFiniteDifferences) {
  Generator generator(4);
  using testing::RandomLeaf;
  const std::vector<TensorBase> inputs = {
      RandomLeaf({2, 4, 6}, generator),  // x
      RandomLeaf({18, 6}, generator),    // in_proj_weight
      RandomLeaf({18}, generator),       // in_proj_bias
      RandomLeaf({6, 6}, generator),     // out_proj weight [in, out]
      RandomLeaf({6}, generator)};       // out_proj bias
  std::vector<uint8_t> padding = {0, 0, 0, 0, 0, 0, 1, 0};
  const Tensor<2, Bool> mask =
      Tensor<2, Int>::FromData(
          std::vector<int64_t>(padding.begin(), padding.end()), {2, 4})
          .not_equal(0);
  EXPECT_TRUE(testing::Gradcheck(
      [&](std::span<const TensorBase> in) {
        MultiHeadAttention attention{
            AsParam<2>(in[1]), AsParam<1>(in[2]),
            Linear{AsParam<2>(in[3]), AsParam<1>(in[4])},
            /*num_heads=*/3, /*dropout=*/0};
        return attention
            .Forward(Tensor<3>(in[0]),
                     {.causal = true, .key_padding_mask = mask})
            .base();
      },
      inputs));
}

TEST(MultiHeadAttentionTest, DropoutDrawsFromTheGivenGenerator) {
  MultiHeadAttention attention =
      MultiHeadAttentionConfig{.d_model = 8, .num_heads = 2, .dropout = 0.5}
          .Init();
  const Tensor<3> x = Read<3>("self.x");
  PhiloxGenerator first(9), second(9);
  const Tensor<3> a =
      attention.Forward(x, {.mode = ForwardMode::kTraining, .rng = &first});
  const Tensor<3> b =
      attention.Forward(x, {.mode = ForwardMode::kTraining, .rng = &second});
  const Tensor<3> inference = attention.Forward(x);
  EXPECT_EQ(a.to_data<float>(), b.to_data<float>());
  EXPECT_NE(a.to_data<float>(), inference.to_data<float>());
  EXPECT_EQ(first.state().offset, second.state().offset);
  EXPECT_GT(first.state().offset, 0u);
}

TEST(MultiHeadAttentionDeathTest, BadShapesAreNamed) {
  const MultiHeadAttention attention = TorchAttention();
  const Tensor<3> x = Tensor<3>::Zeros({2, 5, 8});
  EXPECT_DEATH(attention.Forward(Tensor<3>::Zeros({2, 5, 6})),
               "MultiHeadAttention\\(E=8\\): query \\[2, 5, 6\\]");
  EXPECT_DEATH(attention.Forward(
                   x, {.key_padding_mask = Tensor<2, Bool>::Zeros({2, 4})}),
               "key_padding_mask \\[2, 4\\], but the keys are \\[B=2, S=5\\]");
  EXPECT_DEATH((MultiHeadAttentionConfig{.d_model = 8, .num_heads = 3}.Init()),
               "d_model 8 is not a multiple of num_heads 3");
  MultiHeadAttention dropping =
      MultiHeadAttentionConfig{.d_model = 8, .num_heads = 2, .dropout = 0.1}
          .Init();
  EXPECT_DEATH(dropping.Forward(x, {.mode = ForwardMode::kTraining}),
               "needs AttentionOptions::rng");
}

// --- The fused kernel against the composed ops -------------------------------

struct FusedCase {
  int64_t batch, heads, queries, keys, head_dim, value_dim;
  bool causal, padding;
};

// Leaf() is a random [B, H, L, D] leaf of `dtype` that requires grad.
Tensor<4> Leaf(Generator& generator, int64_t b, int64_t h, int64_t l, int64_t d,
               DType dtype) {
  return Tensor<4>(testing::RandomLeaf({b, h, l, d}, generator, -1, 1))
      .to(dtype)
      .detach()
      .set_require_grad(true);
}

// Padding() masks the last third of batch 1's keys (batch 0 keeps all).
AttentionOptions WithMasks(const FusedCase& c) {
  AttentionOptions options{.causal = c.causal};
  if (c.padding) {
    std::vector<int64_t> mask(c.batch * c.keys, 0);
    for (int64_t s = c.keys - c.keys / 3; s < c.keys; ++s) {
      mask[(c.batch - 1) * c.keys + s] = 1;
    }
    options.key_padding_mask =
        Tensor<2, Int>::FromData(mask, {c.batch, c.keys}).not_equal(0);
  }
  return options;
}

class FusedAttentionTest
    : public ::testing::TestWithParam<std::tuple<FusedCase, DType>> {};

TEST_P(FusedAttentionTest, MatchesTheComposedOpsForwardAndBackward) {
  const auto [c, dtype] = GetParam();
  Generator generator(17);
  const Tensor<4> q =
      Leaf(generator, c.batch, c.heads, c.queries, c.head_dim, dtype);
  const Tensor<4> k =
      Leaf(generator, c.batch, c.heads, c.keys, c.head_dim, dtype);
  const Tensor<4> v =
      Leaf(generator, c.batch, c.heads, c.keys, c.value_dim, dtype);
  const AttentionOptions options = WithMasks(c);
  const std::optional<Tensor<4>> fused = FusedAttention(
      q, k, v, c.causal,
      options.key_padding_mask.has_value() ? options.key_padding_mask->base()
                                           : TensorBase());
  ASSERT_TRUE(fused.has_value()) << "no CPU kernel for " << DTypeName(dtype);
  const Tensor<4> composed = ComposedAttention(q, k, v, options);
  const double tolerance = dtype == DType::kF64 ? 1e-12 : 2e-6;
  ExpectNear(composed.to(DType::kF32), fused->to(DType::kF32), "output",
             tolerance);
  const Tensor<4> r = Tensor<4>(testing::RandomLeaf(fused->shape(), generator))
                          .to(dtype)
                          .detach();
  const Gradients want = Backward((composed * r).sum());
  const Gradients got = Backward((*fused * r).sum());
  for (const auto& [name, leaf] :
       {std::pair{"q", q}, std::pair{"k", k}, std::pair{"v", v}}) {
    ExpectNear(want.Get(leaf)->to(DType::kF32), got.Get(leaf)->to(DType::kF32),
               std::string("grad ") + name, 10 * tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedAttentionTest,
    ::testing::Combine(
        ::testing::Values(
            // Several tiles each way, ragged ends, Dv != Dh.
            FusedCase{2, 3, 130, 70, 8, 5, false, true},
            // Causal with more queries than keys, and the reverse.
            FusedCase{2, 2, 100, 67, 4, 4, true, false},
            FusedCase{1, 2, 33, 150, 4, 6, true, true},
            // The forward's 256-key blocks (two full ones and a ragged
            // third, padded), and the backward's 256-query blocks (two,
            // causal and padded).
            FusedCase{2, 1, 70, 600, 4, 3, false, true},
            FusedCase{2, 1, 330, 330, 4, 4, true, true},
            // One query, one key.
            FusedCase{1, 1, 1, 1, 3, 2, false, false},
            // Head widths of one and more registers' worth (the tile
            // products' 32-column panels), causal tiles split into panels
            // of eight queries at ragged offsets.
            FusedCase{2, 2, 130, 130, 32, 48, true, true},
            FusedCase{1, 2, 77, 140, 40, 32, false, true},
            FusedCase{1, 1, 141, 67, 16, 33, true, false}),
        ::testing::Values(DType::kF32, DType::kF64)));

TEST(FusedAttentionTest, ReadsAndWritesTheProjectionsLayoutInPlace) {
  // q, k, v as MultiHeadAttention makes them: [B, L, H, D] memory viewed as
  // heads. The kernels read them in place and write the output and the
  // gradients in that layout, and the results equal the composed ops'.
  for (const bool causal : {false, true}) {
    Generator generator(23);
    const int64_t b = 2, h = 3, t = 70, s = 90, d = 8;
    const auto heads = [&](int64_t length) {
      return Tensor<4>(testing::RandomLeaf({b, length, h, d}, generator, -1, 1))
          .permute({0, 2, 1, 3})
          .detach()
          .set_require_grad(true);
    };
    const Tensor<4> q = heads(t), k = heads(s), v = heads(s);
    ASSERT_FALSE(q.base().is_contiguous());
    const std::optional<Tensor<4>> fused =
        FusedAttention(q, k, v, causal, TensorBase());
    ASSERT_TRUE(fused.has_value());
    EXPECT_TRUE(fused->permute({0, 2, 1, 3}).base().is_contiguous())
        << "the output should merge into [B, T, E] without a copy";
    const Tensor<4> composed = ComposedAttention(q, k, v, {.causal = causal});
    ExpectNear(composed, *fused, "output", 2e-6);
    const Tensor<4> r =
        Tensor<4>(testing::RandomLeaf(fused->shape(), generator)).detach();
    const Gradients want = Backward((composed * r).sum());
    const Gradients got = Backward((*fused * r).sum());
    for (const auto& [name, leaf] :
         {std::pair{"q", q}, std::pair{"k", k}, std::pair{"v", v}}) {
      ExpectNear(*want.Get(leaf), *got.Get(leaf), std::string("grad ") + name,
                 2e-5);
    }
  }
}

TEST(FusedAttentionTest, GradientsMatchFiniteDifferencesAcrossTiles) {
  Generator generator(8);
  const FusedCase c{1, 1, 70, 66, 3, 2, true, false};
  EXPECT_TRUE(testing::Gradcheck(
      [&](std::span<const TensorBase> in) {
        return FusedAttention(Tensor<4>(in[0]), Tensor<4>(in[1]),
                              Tensor<4>(in[2]), c.causal, TensorBase())
            ->base();
      },
      {testing::RandomLeaf({1, 1, 70, 3}, generator),
       testing::RandomLeaf({1, 1, 66, 3}, generator),
       testing::RandomLeaf({1, 1, 66, 2}, generator)}));
}

TEST(FusedAttentionDeathTest, MismatchedShapesAreNamed) {
  const Tensor<4> q = Tensor<4>::Zeros({1, 2, 4, 8});
  const Tensor<4> k = Tensor<4>::Zeros({1, 2, 5, 8});
  EXPECT_DEATH(
      FusedAttention(q, k, Tensor<4>::Zeros({1, 2, 4, 8}), false, TensorBase()),
      "FusedAttention: q \\[1, 2, 4, 8\\], k \\[1, 2, 5, 8\\] "
      "and v \\[1, 2, 4, 8\\] do not fit");
  EXPECT_DEATH(
      FusedAttention(q, k, k, false, Tensor<2, Bool>::Zeros({1, 4}).base()),
      "key padding mask .* must be contiguous Bool \\[B=1, S=5\\]");
}

TEST(FusedAttentionTest, SixteenBitFloatsFallBackToTheComposedOps) {
  const Tensor<4> x = Tensor<4>::Ones({1, 1, 4, 2}).to(DType::kBF16);
  EXPECT_FALSE(FusedAttention(x, x, x, false, TensorBase()).has_value());
  const Tensor<4> y = ScaledDotProductAttention(x, x, x, {});
  EXPECT_EQ(DType::kBF16, y.dtype());
  EXPECT_EQ(Tensor<4>::Ones({1, 1, 4, 2}).to_data<float>(), y.to_data<float>());
}

// The fused forward and backward at T = S = 2048 allocate far less than the
// one [T, S] weight matrix the composed ops would hold (16 MiB in f32).
TEST(FusedAttentionTest, MemoryIsLinearInTheSequence) {
  Generator generator(5);
  const int64_t t = 2048, d = 32;
  const Tensor<4> q = Leaf(generator, 1, 1, t, d, DType::kF32);
  const Tensor<4> k = Leaf(generator, 1, 1, t, d, DType::kF32);
  const Tensor<4> v = Leaf(generator, 1, 1, t, d, DType::kF32);
  const int64_t inputs = 3 * t * d * 4;
  ResetMemoryStats(Device::Cpu());
  const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
  const Tensor<4> y = *FusedAttention(q, k, v, true, TensorBase());
  const Gradients grads = Backward(y.sum());
  const int64_t peak = GetMemoryStats(Device::Cpu()).peak_live_bytes - before;
  const int64_t weights = t * t * 4;
  EXPECT_LT(peak, 4 * inputs) << "peak " << peak << " bytes";
  EXPECT_LT(peak, weights / 4) << "peak " << peak << " bytes";
  EXPECT_TRUE(grads.Get(q).has_value());
}

TEST(TransformerEncoderLayerTest, PreNormCausalLayerMatchesTorch) {
  TransformerEncoderLayer layer =
      TransformerEncoderLayerConfig{
          .d_model = 8, .num_heads = 2, .d_feedforward = 16}
          .Init();
  LoadOptions options;
  options.pytorch = PyTorchAdapter{};
  const auto report = LoadModule(
      layer, std::string(kData) + "torch_encoder_layer.safetensors", options);
  ASSERT_TRUE(report.ok()) << report.status();
  const Tensor<3> x = Read<3>("layer.x").set_require_grad(true);
  const Tensor<3> y = layer.Forward(x, {.causal = true});
  ExpectNear(Read<3>("layer.y"), y, "output");
  const Gradients grads = Backward((y * Read<3>("layer.r")).sum());
  ExpectNear(Read<3>("layer.grad.x"), *grads.Get(x), "grad x");
  ExpectNear(Read<2>("layer.grad.linear1.weight").t().contiguous(),
             grads.Get(layer.linear1.weight)->contiguous(),
             "grad linear1.weight");
}

TEST(TransformerEncoderLayerTest, GradientsMatchFiniteDifferences) {
  Generator generator(12);
  using testing::RandomLeaf;
  // Checked: the input, the attention's projections, linear1's weight and
  // norm2's gamma; the other parameters are fixed f64 values.
  const std::vector<TensorBase> inputs = {
      RandomLeaf({2, 3, 4}, generator), RandomLeaf({12, 4}, generator),
      RandomLeaf({4, 8}, generator), RandomLeaf({4}, generator)};
  const auto fixed = [&](const Shape& shape) {
    return RandomLeaf(shape, generator).Detach();
  };
  const TensorBase in_proj_bias = fixed({12}), out_w = fixed({4, 4}),
                   out_b = fixed({4}), b1 = fixed({8}), w2 = fixed({8, 4}),
                   b2 = fixed({4}), gamma1 = fixed({4}), beta1 = fixed({4}),
                   beta2 = fixed({4});
  EXPECT_TRUE(testing::Gradcheck(
      [&](std::span<const TensorBase> in) {
        TransformerEncoderLayer layer{
            MultiHeadAttention{AsParam<2>(in[1]), AsParam<1>(in_proj_bias),
                               Linear{AsParam<2>(out_w), AsParam<1>(out_b)},
                               /*num_heads=*/2, /*dropout=*/0},
            Linear{AsParam<2>(in[2]), AsParam<1>(b1)},
            Linear{AsParam<2>(w2), AsParam<1>(b2)},
            LayerNorm{AsParam<1>(gamma1), AsParam<1>(beta1)},
            LayerNorm{AsParam<1>(in[3]), AsParam<1>(beta2)}};
        return layer.Forward(Tensor<3>(in[0]), {.causal = true}).base();
      },
      inputs));
}

TEST(TransformerEncoderLayerTest, TrainingDropoutIsReproducible) {
  const TransformerEncoderLayer layer =
      TransformerEncoderLayerConfig{
          .d_model = 8, .num_heads = 2, .d_feedforward = 16, .dropout = 0.2}
          .Init();
  const Tensor<3> x = Read<3>("layer.x");
  PhiloxGenerator first(3), second(3);
  const AttentionOptions a{.mode = ForwardMode::kTraining, .rng = &first};
  const AttentionOptions b{.mode = ForwardMode::kTraining, .rng = &second};
  EXPECT_EQ(layer.Forward(x, a).to_data<float>(),
            layer.Forward(x, b).to_data<float>());
  EXPECT_NE(layer.Forward(x, a).to_data<float>(),
            layer.Forward(x).to_data<float>());
  EXPECT_DEATH(layer.Forward(x, {.mode = ForwardMode::kTraining}),
               "needs AttentionOptions::rng");
}

TEST(RmsNormTest, MatchesTorchAndFiniteDifferences) {
  RmsNorm norm{Param<Tensor<1>>::Initialized(
      ParamId::New(), Read<1>("rms.weight").set_require_grad(true))};
  const Tensor<2> x = Read<2>("rms.x").set_require_grad(true);
  const Tensor<2> y = norm.Forward(x);
  ExpectNear(Read<2>("rms.y"), y, "output");
  const Gradients grads = Backward((y * Read<2>("rms.r")).sum());
  ExpectNear(Read<2>("rms.grad.x"), *grads.Get(x), "grad x");
  ExpectNear(Read<1>("rms.grad.weight"), *grads.Get(norm.weight),
             "grad weight");

  Generator generator(2);
  EXPECT_TRUE(testing::Gradcheck(
      [](std::span<const TensorBase> in) {
        RmsNorm f64{AsParam<1>(in[1])};
        return f64.Forward(Tensor<3>(in[0])).base();
      },
      {testing::RandomLeaf({2, 3, 5}, generator),
       testing::RandomLeaf({5}, generator)}));
}

TEST(RmsNormDeathTest, WrongFeatureCountIsNamed) {
  const RmsNorm norm = RmsNormConfig{6}.Init();
  EXPECT_DEATH(norm.Forward(Tensor<2>::Zeros({3, 5})),
               "RmsNorm: input \\[3, 5\\] has 5 features, the layer 6");
}

TEST(GroupNormTest, MatchesTorchAndFiniteDifferences) {
  GroupNorm norm{AsParam<1>(Read<1>("gn.weight").set_require_grad(true).base()),
                 AsParam<1>(Read<1>("gn.bias").set_require_grad(true).base()),
                 /*num_groups=*/2};
  const Tensor<3> x = Read<3>("gn.x").set_require_grad(true);
  const Tensor<3> y = norm.Forward(x);
  ExpectNear(Read<3>("gn.y"), y, "output");
  const Gradients grads = Backward((y * Read<3>("gn.r")).sum());
  ExpectNear(Read<3>("gn.grad.x"), *grads.Get(x), "grad x");
  ExpectNear(Read<1>("gn.grad.weight"), *grads.Get(norm.weight), "grad weight");
  ExpectNear(Read<1>("gn.grad.bias"), *grads.Get(norm.bias), "grad bias");

  Generator generator(6);
  EXPECT_TRUE(testing::Gradcheck(
      [](std::span<const TensorBase> in) {
        GroupNorm f64{AsParam<1>(in[1]), AsParam<1>(in[2]), 3};
        return f64.Forward(Tensor<4>(in[0])).base();
      },
      {testing::RandomLeaf({2, 6, 2, 3}, generator),
       testing::RandomLeaf({6}, generator),
       testing::RandomLeaf({6}, generator)}));
  EXPECT_DEATH(norm.Forward(Tensor<3>::Zeros({2, 4, 5})),
               "GroupNorm\\(2 groups, 6 channels\\): input \\[2, 4, 5\\]");
  EXPECT_DEATH((GroupNormConfig{.num_groups = 4, .num_channels = 6}.Init()),
               "6 channels do not split into 4 groups");
}

TEST(Conv1dTest, MatchesTorchAndFiniteDifferences) {
  Conv1d conv{
      AsParam<3>(Read<3>("conv1d.weight").set_require_grad(true).base()),
      AsParam<1>(Read<1>("conv1d.bias").set_require_grad(true).base()),
      /*stride=*/2, /*padding=*/1, /*dilation=*/2};
  const Tensor<3> x = Read<3>("conv1d.x").set_require_grad(true);
  const Tensor<3> y = conv.Forward(x);
  ExpectNear(Read<3>("conv1d.y"), y, "output");
  const Gradients grads = Backward((y * Read<3>("conv1d.r")).sum());
  ExpectNear(Read<3>("conv1d.grad.x"), *grads.Get(x), "grad x");
  ExpectNear(Read<3>("conv1d.grad.weight"), *grads.Get(conv.weight),
             "grad weight");
  ExpectNear(Read<1>("conv1d.grad.bias"), *grads.Get(*conv.bias), "grad bias");

  Generator generator(7);
  EXPECT_TRUE(testing::Gradcheck(
      [](std::span<const TensorBase> in) {
        Conv1d f64{AsParam<3>(in[1]), std::nullopt, 1, 2, 1};
        return f64.Forward(Tensor<3>(in[0])).base();
      },
      {testing::RandomLeaf({2, 2, 5}, generator),
       testing::RandomLeaf({3, 2, 3}, generator)}));
  EXPECT_DEATH(conv.Forward(Tensor<3>::Zeros({2, 5, 11})),
               "Conv1d: input \\[2, 5, 11\\] has 5 channels");
}

TEST(RotaryTest, MatchesTheReferenceAndKeepsRelativePositions) {
  ExpectNear(Read<4>("rope.y"), ApplyRotary(Read<4>("rope.x"), 3), "output",
             1e-6);
  // q k^T depends only on the positions' difference: shifting both by the
  // same offset changes nothing.
  Generator generator(9);
  const Tensor<4> q(testing::RandomLeaf({1, 1, 5, 8}, generator));
  const Tensor<4> k(testing::RandomLeaf({1, 1, 5, 8}, generator));
  const auto scores = [&](int64_t offset) {
    return matmul(ApplyRotary(q, offset),
                  ApplyRotary(k, offset).transpose(2, 3))
        .to_data<double>();
  };
  const std::vector<double> at0 = scores(0), at7 = scores(7);
  for (size_t i = 0; i < at0.size(); ++i) EXPECT_NEAR(at0[i], at7[i], 1e-9);
  EXPECT_DEATH(ApplyRotary(Tensor<4>::Zeros({1, 1, 2, 5})),
               "the head size must be even");
}

TEST(PositionsTest, SinusoidalMatchesTheReference) {
  ExpectNear(Read<2>("sinusoidal"), SinusoidalPositions(7, 6), "table", 1e-6);
}

TEST(RotaryTest, GradientMatchesFiniteDifferences) {
  Generator generator(13);
  EXPECT_TRUE(testing::Gradcheck(
      [](std::span<const TensorBase> in) {
        return ApplyRotary(Tensor<4>(in[0]), 2).base();
      },
      {testing::RandomLeaf({1, 2, 3, 6}, generator)}));
}

TEST(PositionsTest, LearnedTableGivesItsFirstRows) {
  const PositionalEmbedding positions =
      PositionalEmbeddingConfig{.max_length = 16, .d_model = 4}.Init();
  const Tensor<2> rows = positions.Forward(5);
  EXPECT_EQ((Shape{5, 4}), rows.shape());
  EXPECT_EQ(positions.weight->narrow(0, 0, 5).to_data<float>(),
            rows.to_data<float>());
  EXPECT_DEATH(positions.Forward(17),
               "a sequence of 17 positions, but the table holds 16");
  EXPECT_DEATH(SinusoidalPositions(4, 5), "d_model must be even");
}

}  // namespace
}  // namespace kindling::nn
