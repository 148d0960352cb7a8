// Every nn layer's gradients against central finite differences in f64
// (tests/autodiff/gradcheck.h) on random inputs: Conv2d (and pooled, as
// one node) and the pools with
// stride, padding and dilation, non-contiguous inputs, batch size 1;
// LayerNorm, BatchNorm (training), Embedding with repeated ids, the
// activations, and a Linear + LayerNorm + cross-entropy MLP end to end.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/param.h"
#include "kindling/nn/activation.h"
#include "kindling/nn/batch_norm.h"
#include "kindling/nn/conv2d.h"
#include "kindling/nn/dropout.h"
#include "kindling/nn/embedding.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/nn/loss.h"
#include "kindling/nn/pool2d.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling::nn {
namespace {

using testing::Gradcheck;
using testing::RandomLeaf;
using testing::ToDoubles;
using Inputs = std::span<const TensorBase>;

// AsParam() wraps a gradcheck input as a layer's parameter. The value keeps
// the input's leaf id, so its gradient is reported where Gradcheck looks;
// a perturbed input (no grad) gets a fresh id.
template <int D>
Param<Tensor<D>> AsParam(const TensorBase& value) {
  const ParamId id = value.is_require_grad() ? value.leaf_id() : ParamId::New();
  return Param<Tensor<D>>::Initialized(id, Tensor<D>(value));
}

// NodeName() is the name of the node that produced `tensor`.
const char* NodeName(const TensorBase& tensor) {
  return tensor.autodiff_meta()->node->name();
}

// --- Conv2d
// ----------------------------------------------------------------------

struct ConvCase {
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  int64_t batch;
  bool bias;
  bool transposed_input;  // the input is a [N, C, W, H] leaf, transposed
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << Window2d{c.kernel, c.stride, c.padding, c.dilation}
      << " batch=" << c.batch << " bias=" << c.bias
      << " transposed_input=" << c.transposed_input;
}

class Conv2dGradientTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dGradientTest, MatchesFiniteDifferences) {
  const ConvCase c = GetParam();
  Generator generator(11);
  const int64_t in_channels = 2, out_channels = 3, height = 6, width = 5;
  const Shape input_shape = c.transposed_input
                                ? Shape{c.batch, in_channels, width, height}
                                : Shape{c.batch, in_channels, height, width};
  std::vector<TensorBase> inputs = {
      RandomLeaf(input_shape, generator),
      RandomLeaf({out_channels, in_channels, c.kernel[0], c.kernel[1]},
                 generator)};
  if (c.bias) inputs.push_back(RandomLeaf({out_channels}, generator));
  const Window2d window{c.kernel, c.stride, c.padding, c.dilation};
  const auto conv = [&](Inputs x) {
    Conv2d layer{AsParam<4>(x[1]), std::nullopt, window};
    if (c.bias) layer.bias = AsParam<1>(x[2]);
    const TensorBase input = c.transposed_input ? x[0].Transpose(2, 3) : x[0];
    return layer.Forward(Tensor<4>(input)).base();
  };
  EXPECT_STREQ("conv2d", NodeName(conv(inputs)));
  EXPECT_TRUE(Gradcheck(conv, inputs));
}

INSTANTIATE_TEST_SUITE_P(
    StridePaddingDilation, Conv2dGradientTest,
    ::testing::Values(ConvCase{{3, 3}, {1, 1}, {0, 0}, {1, 1}, 2, true, false},
                      ConvCase{{3, 2}, {2, 1}, {1, 0}, {1, 1}, 2, true, false},
                      ConvCase{{2, 2}, {1, 1}, {1, 1}, {2, 1}, 1, false, false},
                      ConvCase{{3, 3}, {2, 2}, {1, 2}, {2, 2}, 2, true, true},
                      ConvCase{{1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, true},
                      ConvCase{
                          {2, 3}, {3, 2}, {2, 1}, {1, 1}, 1, true, false}));

TEST(Conv2dGradientTest, OnlyTheInputNeedsAGradient) {
  Generator generator(12);
  const TensorBase weight = RandomLeaf({2, 2, 3, 3}, generator).Detach();
  const Conv2d layer{AsParam<4>(weight), std::nullopt,
                     Window2d{{3, 3}, {1, 1}, {1, 1}}};
  EXPECT_TRUE(
      Gradcheck([&](Inputs x) { return layer.Forward(Tensor<4>(x[0])).base(); },
                {RandomLeaf({1, 2, 4, 4}, generator)}));
}

TEST(Conv2dGradientTest, OnlyTheParametersNeedGradients) {
  // The first layer of a model: the images need no gradient.
  Generator generator(14);
  const Tensor<4> images(RandomLeaf({2, 2, 5, 4}, generator).Detach());
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        const Conv2d layer{AsParam<4>(x[0]), AsParam<1>(x[1]),
                           Window2d{{2, 2}, {2, 1}, {1, 0}}};
        return layer.Forward(images).base();
      },
      {RandomLeaf({3, 2, 2, 2}, generator), RandomLeaf({3}, generator)}));
}

// --- Conv2d::ForwardMaxPool
// -----------------------------------------------------

// PooledConvolution: a Conv2d of `in` -> `out` channels (3x3, padding 1)
// over `input_shape`'s images, in `dtype`, every operand a leaf.
struct PooledConvolution {
  PooledConvolution(const Shape& input_shape, int64_t out, DType dtype,
                    bool input_needs_grad, Generator& generator)
      : input(Leaf(input_shape, dtype, generator)
                  .set_require_grad(input_needs_grad)),
        weight(Leaf({out, input_shape[1], 3, 3}, dtype, generator)),
        bias(Leaf({out}, dtype, generator)),
        layer{AsParam<4>(weight), AsParam<1>(bias),
              Window2d{{3, 3}, {1, 1}, {1, 1}}} {}

  static TensorBase Leaf(const Shape& shape, DType dtype,
                         Generator& generator) {
    return RandomLeaf(shape, generator)
        .Detach()
        .To(dtype)
        .set_require_grad(true);
  }

  // ExpectSameAsComposed() checks ForwardMaxPool() against the pool of
  // Forward(): the same values and gradients, bit for bit (the same kernels'
  // results, fused or not), from one node.
  void ExpectSameAsComposed(PoolActivation activation,
                            Generator& generator) const {
    const MaxPool2d pool{Window2d{{2, 2}, {2, 2}}};
    const Tensor<4> fused =
        layer.ForwardMaxPool(Tensor<4>(input), pool, activation);
    const Tensor<4> convolved = layer.Forward(Tensor<4>(input));
    const Tensor<4> composed = activation == PoolActivation::kRelu
                                   ? pool.ForwardRelu(convolved)
                                   : pool.Forward(convolved);
    EXPECT_STREQ("conv2d_max_pool", NodeName(fused.base()));
    EXPECT_EQ(composed.to_data<double>(), fused.to_data<double>());
    const Tensor<4> weights(
        RandomLeaf(fused.shape(), generator).To(fused.dtype()).Detach());
    const Gradients want = Backward((composed * weights).sum());
    const Gradients got = Backward((fused * weights).sum());
    for (const TensorBase& leaf : {input, weight, bias}) {
      if (!leaf.is_require_grad()) continue;
      EXPECT_EQ(ToDoubles(*want.Get(leaf.leaf_id())),
                ToDoubles(*got.Get(leaf.leaf_id())));
    }
  }

  TensorBase input, weight, bias;
  Conv2d layer;
};

TEST(Conv2dMaxPoolGradientTest, IsThePoolOfTheConvolution) {
  Generator generator(31);
  // f64 with an odd side: the two ops one after the other on every backend.
  // f32 with 16-channel blocks: on an AVX-512 CPU oneDNN's convolution pools
  // its own blocked output (backend/cpu/blocked_max_pool.h). f32 with one
  // channel: Kindling's kernels pool a sample at a time, and a first layer's
  // backward (no input gradient) rebuilds a sample's gradient at a time.
  for (const auto& [shape, out, dtype, input_needs_grad] :
       {std::tuple{Shape{2, 3, 7, 6}, int64_t{4}, DType::kF64, true},
        std::tuple{Shape{4, 16, 8, 6}, int64_t{32}, DType::kF32, true},
        std::tuple{Shape{4, 1, 16, 20}, int64_t{8}, DType::kF32, true},
        std::tuple{Shape{4, 1, 16, 20}, int64_t{8}, DType::kF32, false}}) {
    SCOPED_TRACE(::testing::Message()
                 << shape.ToString() << " input grad " << input_needs_grad);
    const PooledConvolution conv(shape, out, dtype, input_needs_grad,
                                 generator);
    conv.ExpectSameAsComposed(PoolActivation::kNone, generator);
    conv.ExpectSameAsComposed(PoolActivation::kRelu, generator);
  }
}

TEST(Conv2dMaxPoolGradientTest, MatchesFiniteDifferences) {
  Generator generator(32);
  const MaxPool2d pool{Window2d{{2, 2}, {2, 2}}};
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        const Conv2d layer{AsParam<4>(x[1]), AsParam<1>(x[2]),
                           Window2d{{3, 3}, {1, 1}, {1, 1}}};
        return layer
            .ForwardMaxPool(Tensor<4>(x[0]), pool, PoolActivation::kRelu)
            .base();
      },
      {RandomLeaf({2, 2, 4, 6}, generator), RandomLeaf({3, 2, 3, 3}, generator),
       RandomLeaf({3}, generator)}));
}

TEST(Conv2dMaxPoolGradientTest, OnlyTheParametersNeedGradients) {
  // The first layer of a model: the images need no gradient, and the node
  // keeps no weight for an input gradient.
  Generator generator(33);
  const Tensor<4> images(RandomLeaf({2, 16, 4, 4}, generator).Detach());
  const MaxPool2d pool{Window2d{{2, 2}, {2, 2}}};
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        const Conv2d layer{AsParam<4>(x[0]), AsParam<1>(x[1]),
                           Window2d{{3, 3}, {1, 1}, {1, 1}}};
        return layer.ForwardMaxPool(images, pool).base();
      },
      {RandomLeaf({16, 16, 3, 3}, generator), RandomLeaf({16}, generator)}));
}

// --- Patches (im2col) and its adjoint
// -----------------------------------------

TEST(PatchesGradientTest, OverlappingWindowsSum) {
  Generator generator(13);
  for (const Window2d& window :
       {Window2d{{3, 3}, {1, 1}, {1, 1}},
        Window2d{{2, 3}, {2, 1}, {0, 1}, {2, 2}}, Window2d{{2, 2}, {3, 3}}}) {
    EXPECT_TRUE(Gradcheck(
        [&](Inputs x) { return Patches(Tensor<4>(x[0]), window, 0.0).base(); },
        {RandomLeaf({2, 2, 7, 6}, generator)}));
  }
}

TEST(PatchesGradientTest, AllOnesCountsWindowsPerCell) {
  // With stride 1 and a 3x3 window over a 3x3 input padded by 1, the center
  // cell is in all 9 windows, a corner in 4.
  const Tensor<5> ones =
      Tensor<5>::Ones({1, 1, 9, 3, 3}, Device::Cpu(), DType::kF64);
  const Tensor<4> counts =
      PatchesBackward(ones, Window2d{{3, 3}, {1, 1}, {1, 1}}, {1, 1, 3, 3});
  EXPECT_EQ((std::vector<double>{4, 6, 4, 6, 9, 6, 4, 6, 4}),
            counts.to_data<double>());
}

// --- Pools
// -------------------------------------------------------------------------

struct PoolCase {
  std::array<int64_t, 2> kernel, stride, padding, dilation;
  int64_t batch;
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << Window2d{c.kernel, c.stride, c.padding, c.dilation}
      << " batch=" << c.batch;
}

class Pool2dGradientTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(Pool2dGradientTest, MaxMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  Generator generator(21);
  const MaxPool2d pool{Window2d{c.kernel, c.stride, c.padding, c.dilation}};
  const std::vector<TensorBase> inputs = {
      RandomLeaf({c.batch, 2, 5, 7}, generator)};
  EXPECT_STREQ("max_pool2d",
               NodeName(pool.Forward(Tensor<4>(inputs[0])).base()));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return pool.Forward(Tensor<4>(x[0])).base(); }, inputs));
  // Non-contiguous: a transposed [N, C, 7, 5] leaf.
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return pool.Forward(Tensor<4>(x[0].Transpose(2, 3))).base();
      },
      {RandomLeaf({c.batch, 2, 7, 5}, generator)}));
}

TEST_P(Pool2dGradientTest, MaxReluIsMaxThenRelu) {
  // ForwardRelu() against Forward().relu(): the same values and the same
  // gradients (bit for bit: the same operations in the same order), one node.
  const PoolCase c = GetParam();
  Generator generator(23);
  const MaxPool2d pool{Window2d{c.kernel, c.stride, c.padding, c.dilation}};
  for (const bool transposed : {false, true}) {
    const TensorBase leaf = RandomLeaf({c.batch, 2, 5, 7}, generator);
    const auto input = [&] {
      return Tensor<4>(transposed ? leaf.Transpose(2, 3) : leaf);
    };
    const Tensor<4> fused = pool.ForwardRelu(input());
    const Tensor<4> composed = pool.Forward(input()).relu();
    EXPECT_STREQ("max_pool2d_relu", NodeName(fused.base()));
    EXPECT_EQ(composed.to_data<double>(), fused.to_data<double>());
    const Tensor<4> weights(RandomLeaf(fused.shape(), generator).Detach());
    const Gradients want = Backward((composed * weights).sum());
    const Gradients got = Backward((fused * weights).sum());
    EXPECT_EQ(ToDoubles(*want.Get(leaf.leaf_id())),
              ToDoubles(*got.Get(leaf.leaf_id())));
  }
}

TEST_P(Pool2dGradientTest, AvgMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  Generator generator(22);
  const AvgPool2d pool{Window2d{c.kernel, c.stride, c.padding, c.dilation}};
  const std::vector<TensorBase> inputs = {
      RandomLeaf({c.batch, 2, 5, 7}, generator)};
  EXPECT_STREQ("avg_pool2d",
               NodeName(pool.Forward(Tensor<4>(inputs[0])).base()));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return pool.Forward(Tensor<4>(x[0])).base(); }, inputs));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) {
        return pool.Forward(Tensor<4>(x[0].Transpose(2, 3))).base();
      },
      {RandomLeaf({c.batch, 2, 7, 5}, generator)}));
}

INSTANTIATE_TEST_SUITE_P(
    StridePaddingDilation, Pool2dGradientTest,
    ::testing::Values(PoolCase{{2, 2}, {2, 2}, {0, 0}, {1, 1}, 2},
                      PoolCase{{3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},  // overlap
                      PoolCase{{3, 2}, {2, 1}, {1, 1}, {1, 1}, 2},
                      PoolCase{{2, 2}, {1, 2}, {1, 0}, {2, 2}, 1}));

TEST(Pool2dGradientTest, MaxRoutesTiesToTheFirstMaximum) {
  // One 2x2 window of equal values: PyTorch gives the whole gradient to the
  // first cell, not a quarter to each.
  const Tensor<4> input =
      Tensor<4>::Ones({1, 1, 2, 2}, Device::Cpu(), DType::kF64)
          .set_require_grad(true);
  const MaxPool2d pool{Window2d{{2, 2}, {2, 2}}};
  const Gradients grads = Backward(pool.Forward(input).sum());
  EXPECT_EQ((std::vector<double>{1, 0, 0, 0}),
            ToDoubles(*grads.Get(input.leaf_id())));
}

TEST(Pool2dGradientTest, AvgCountsPaddingInTheDivisor) {
  // A 3x3 window padded by 1 over a 1x1 input: the output is x / 9, so the
  // gradient is 1/9 (count_include_pad=True).
  const Tensor<4> input =
      Tensor<4>::Ones({1, 1, 1, 1}, Device::Cpu(), DType::kF64)
          .set_require_grad(true);
  const AvgPool2d pool{Window2d{{3, 3}, {1, 1}, {1, 1}}};
  const Gradients grads = Backward(pool.Forward(input).sum());
  EXPECT_DOUBLE_EQ(1.0 / 9, ToDoubles(*grads.Get(input.leaf_id()))[0]);
}

// --- LayerNorm
// ---------------------------------------------------------------------

TEST(LayerNormGradientTest, InputGammaAndBetaMatchFiniteDifferences) {
  Generator generator(31);
  const auto norm = [](Inputs x, bool transposed) {
    const LayerNorm layer{AsParam<1>(x[1]), AsParam<1>(x[2]), 1e-5};
    const TensorBase input = transposed ? x[0].Transpose(1, 2) : x[0];
    return layer.Forward(Tensor<3>(input)).base();
  };
  const std::vector<TensorBase> inputs = {RandomLeaf({2, 3, 5}, generator),
                                          RandomLeaf({5}, generator),
                                          RandomLeaf({5}, generator)};
  EXPECT_STREQ("layer_norm", NodeName(norm(inputs, false)));
  EXPECT_TRUE(Gradcheck([&](Inputs x) { return norm(x, false); }, inputs));
  // Non-contiguous input: a [2, 5, 3] leaf transposed to [2, 3, 5].
  EXPECT_TRUE(
      Gradcheck([&](Inputs x) { return norm(x, true); },
                {RandomLeaf({2, 5, 3}, generator), RandomLeaf({5}, generator),
                 RandomLeaf({5}, generator)}));
  // A batch of one row.
  EXPECT_TRUE(
      Gradcheck([&](Inputs x) { return norm(x, false); },
                {RandomLeaf({1, 1, 4}, generator), RandomLeaf({4}, generator),
                 RandomLeaf({4}, generator)}));
}

TEST(LayerNormGradientTest, MatchesTheComposedForward) {
  Generator generator(32);
  const TensorBase x = RandomLeaf({3, 4}, generator).Detach().To(DType::kF32);
  const LayerNorm layer = LayerNormConfig{4}.Init();
  const Tensor<2> input(x);
  const Tensor<2> mean = input.mean_dim(1);
  const Tensor<2> centered = input - mean;
  const Tensor<2> expected =
      centered / ((centered * centered).mean_dim(1) + 1e-5).sqrt();
  const std::vector<double> actual = layer.Forward(input).to_data<double>();
  const std::vector<double> want = expected.to_data<double>();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(want[i], actual[i], 1e-6);
}

// --- BatchNorm (training)
// ----------------------------------------------------------

template <int R>
BatchNorm<R> BatchNormOf(Inputs x) {
  BatchNorm<R> layer = BatchNormConfig{x[1].numel()}.Init<R>();
  layer.gamma = AsParam<1>(x[1]);
  layer.beta = AsParam<1>(x[2]);
  return layer;
}

TEST(BatchNormGradientTest, TrainingMatchesFiniteDifferences) {
  Generator generator(41);
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return BatchNormOf<2>(x)
            .Forward(Tensor<2>(x[0]), ForwardMode::kTraining)
            .base();
      },
      {RandomLeaf({5, 3}, generator), RandomLeaf({3}, generator),
       RandomLeaf({3}, generator)}));
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return BatchNormOf<4>(x)
            .Forward(Tensor<4>(x[0]), ForwardMode::kTraining)
            .base();
      },
      {RandomLeaf({2, 3, 3, 2}, generator), RandomLeaf({3}, generator),
       RandomLeaf({3}, generator)}));
  // Batch size 1 (statistics over the spatial cells) and a non-contiguous
  // input: a [1, 4, 3, 2] leaf viewed as [1, 2, 3, 4].
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return BatchNormOf<4>(x)
            .Forward(Tensor<4>(x[0].Permute(std::array<int, 4>{0, 3, 2, 1})),
                     ForwardMode::kTraining)
            .base();
      },
      {RandomLeaf({1, 4, 3, 2}, generator), RandomLeaf({2}, generator),
       RandomLeaf({2}, generator)}));
}

TEST(BatchNormGradientTest, InferenceMatchesFiniteDifferences) {
  Generator generator(43);
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        BatchNorm<3> layer = BatchNormOf<3>(x);
        layer.running_mean.update(Tensor<1>::FromData<double>({0.5, -1}, {2}));
        layer.running_var.update(Tensor<1>::FromData<double>({2, 0.25}, {2}));
        return layer.Forward(Tensor<3>(x[0]), ForwardMode::kInference).base();
      },
      {RandomLeaf({3, 2, 4}, generator), RandomLeaf({2}, generator),
       RandomLeaf({2}, generator)}));
}

TEST(BatchNormGradientTest, RunningStatisticsAreDetached) {
  Generator generator(42);
  const BatchNorm<2> layer = BatchNormConfig{3}.Init<2>();
  std::weak_ptr<const GradNode> first_node;
  for (int step = 0; step < 3; ++step) {
    const Tensor<2> input =
        Tensor<2>(RandomLeaf({4, 3}, generator).Detach().To(DType::kF32))
            .set_require_grad(true);
    Tensor<2> output = layer.Forward(input, ForwardMode::kTraining);
    EXPECT_STREQ("batch_norm", NodeName(output.base()));
    if (step == 0) first_node = output.base().autodiff_meta()->node;
    const Gradients grads = Backward(output.sum());
    EXPECT_TRUE(grads.Get(input.leaf_id()).has_value());
    EXPECT_FALSE(layer.running_mean.value().is_require_grad());
    EXPECT_FALSE(layer.running_var.value().is_require_grad());
  }
  // Nothing the layer keeps holds the first step's graph.
  EXPECT_TRUE(first_node.expired());
}

TEST(BatchNormGradientTest, RunningStatisticsFollowTheBatch) {
  const BatchNorm<2> layer = BatchNormConfig{1, /*momentum=*/0.5}.Init<2>();
  const Tensor<2> input =
      Tensor<2>::FromData<float>({1, 2, 3, 6}, {4, 1}).set_require_grad(true);
  const Tensor<2> output = layer.Forward(input, ForwardMode::kTraining);
  // mean 3; unbiased variance (4 + 1 + 0 + 9) / 3 = 14/3.
  EXPECT_FLOAT_EQ(0.5f * 3, layer.running_mean.value().to_data<float>()[0]);
  EXPECT_FLOAT_EQ(0.5f + 0.5f * 14 / 3,
                  layer.running_var.value().to_data<float>()[0]);
}

// --- Embedding
// ----------------------------------------------------------------------

TEST(EmbeddingGradientTest, RepeatedIdsSumTheirGradients) {
  Generator generator(51);
  const Tensor<2, Int> ids =
      Tensor<2, Int>::FromData<int64_t>({1, 3, 1, 0, 1, 4}, {2, 3});
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return Embedding{AsParam<2>(x[0])}.Forward(ids).base(); },
      {RandomLeaf({5, 3}, generator)}));
  // d sum(output) / d weight row r = the number of times r was looked up.
  const TensorBase weight = RandomLeaf({5, 2}, generator);
  const Gradients grads =
      Backward(Embedding{AsParam<2>(weight)}.Forward(ids).sum());
  EXPECT_EQ((std::vector<double>{1, 1, 3, 3, 0, 0, 1, 1, 1, 1}),
            ToDoubles(*grads.Get(weight.leaf_id())));
}

// --- Activations
// ---------------------------------------------------------------------

TEST(ActivationGradientTest, EachActivationOnATransposedInput) {
  Generator generator(61);
  const std::vector<TensorBase> inputs = {RandomLeaf({3, 4}, generator)};
  const auto transposed = [](Inputs x) {
    return Tensor<2>(x[0].Transpose(0, 1));
  };
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return Relu{}.Forward(transposed(x)).base(); }, inputs));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return Gelu{}.Forward(transposed(x)).base(); }, inputs));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return Sigmoid{}.Forward(transposed(x)).base(); },
      inputs));
  EXPECT_TRUE(Gradcheck(
      [&](Inputs x) { return Tanh{}.Forward(transposed(x)).base(); }, inputs));
}

// --- An MLP end to end
// ------------------------------------------------------------

// The model of examples/mlp.h (Linear, relu, hidden Linear, LayerNorm,
// Linear) with cross-entropy on top: every parameter's gradient against
// finite differences of the loss.
TEST(MlpGradientTest, LinearLayerNormCrossEntropyParameters) {
  Generator generator(71);
  const int64_t batch = 3, d_input = 4, d_hidden = 5, classes = 3;
  const Tensor<2> images(RandomLeaf({batch, d_input}, generator).Detach());
  const Tensor<1, Int> labels =
      Tensor<1, Int>::FromData<int64_t>({2, 0, 1}, {batch});
  const std::vector<TensorBase> inputs = {
      RandomLeaf({d_input, d_hidden}, generator, -1, 1),   // fc1.weight
      RandomLeaf({d_hidden}, generator, -1, 1),            // fc1.bias
      RandomLeaf({d_hidden, d_hidden}, generator, -1, 1),  // hidden.weight
      RandomLeaf({d_hidden}, generator, -1, 1),            // hidden.bias
      RandomLeaf({d_hidden}, generator, 0.5, 1.5),         // norm.gamma
      RandomLeaf({d_hidden}, generator, -1, 1),            // norm.beta
      RandomLeaf({d_hidden, classes}, generator, -1, 1),   // fc2.weight
      RandomLeaf({classes}, generator, -1, 1)};            // fc2.bias
  const auto loss = [&](Inputs x) {
    const Linear fc1{AsParam<2>(x[0]), AsParam<1>(x[1])};
    const Linear hidden{AsParam<2>(x[2]), AsParam<1>(x[3])};
    const LayerNorm norm{AsParam<1>(x[4]), AsParam<1>(x[5]), 1e-5};
    const Linear fc2{AsParam<2>(x[6]), AsParam<1>(x[7])};
    Tensor<2> h = fc1.Forward(images).relu();
    h = hidden.Forward(h).relu();
    return CrossEntropy(fc2.Forward(norm.Forward(h)), labels, 0.1).base();
  };
  EXPECT_TRUE(Gradcheck(loss, inputs));
}

TEST(DropoutGradientTest, MatchesFiniteDifferences) {
  // A fixed (seed, offset) makes dropout a fixed linear map x -> x * mask.
  Generator generator(44);
  EXPECT_TRUE(Gradcheck(
      [](Inputs x) {
        return ops::Dropout(x[0], 0.3, /*seed=*/9, /*offset=*/4);
      },
      {RandomLeaf({5, 7}, generator)}));
}

TEST(DropoutGradientTest, LayerGradientIsTheScaledMaskOfItsDraw) {
  const Dropout dropout = DropoutConfig{.prob = 0.25}.Init();
  PhiloxGenerator philox(/*seed=*/11);
  const Tensor<2> input = Tensor<2>::Ones({16, 32}).set_require_grad(true);
  const PhiloxState before = philox.state();
  const Tensor<2> output =
      dropout.Forward(input, ForwardMode::kTraining, philox);
  const Gradients grads = Backward(output.sum());
  std::optional<TensorBase> grad = grads.Get(input.leaf_id());
  ASSERT_TRUE(grad.has_value());
  // The gradient of sum(x * mask) is the mask, which is the output itself
  // for an input of ones: 0 where dropped, 1 / (1 - p) where kept.
  EXPECT_EQ(output.to_data<float>(), Tensor<2>(*grad).to_data<float>());
  EXPECT_NE(philox.state().offset, before.offset);
}

}  // namespace
}  // namespace kindling::nn
