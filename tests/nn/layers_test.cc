// Layer forward passes against straightforward reference loops.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/nn/activation.h"
#include "kindling/nn/batch_norm.h"
#include "kindling/nn/conv2d.h"
#include "kindling/nn/dropout.h"
#include "kindling/nn/embedding.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/nn/pool2d.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {
namespace {

template <int D>
Param<Tensor<D>> Fixed(const std::vector<float>& values, const Shape& shape) {
  return Param<Tensor<D>>::Initialized(ParamId::New(),
                                       Tensor<D>::FromData(values, shape));
}

std::vector<float> RandomValues(int64_t count, uint64_t seed) {
  Generator generator(seed);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(generator.NextNormal());
  return values;
}

void ExpectNear(const std::vector<float>& expected,
                const std::vector<float>& actual, float tolerance = 1e-5f) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(expected[i], actual[i], tolerance) << "at " << i;
  }
}

TEST(LinearTest, ForwardIsXTimesWPlusB) {
  Linear linear{Fixed<2>({1, 2, 3, 4, 5, 6}, {3, 2}), Fixed<1>({0.5, -1}, {2})};
  const Tensor<2> x = Tensor<2>::FromData<float>({1, 0, -1, 2, 1, 0}, {2, 3});
  // Row 0: [1*1 + 0*3 - 1*5, 1*2 + 0*4 - 1*6] + b = [-4, -4] + [0.5, -1].
  // Row 1: [2*1 + 1*3, 2*2 + 1*4] + b = [5, 8] + [0.5, -1].
  ExpectNear({-3.5f, -5.0f, 5.5f, 7.0f}, linear.Forward(x).to_data<float>());
}

TEST(LinearTest, ForwardBroadcastsOverLeadingDims) {
  Linear linear{Fixed<2>({1, 0, 0, 1}, {2, 2}), std::nullopt};
  const Tensor<3> x =
      Tensor<3>::FromData<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  EXPECT_EQ((Shape{2, 2, 2}), linear.Forward(x).shape());
  ExpectNear({1, 2, 3, 4, 5, 6, 7, 8}, linear.Forward(x).to_data<float>());
}

TEST(LinearTest, ConfigInitAllocatesNothingAndUsesPyTorchBounds) {
  const MemoryStats before = GetMemoryStats(Device::Cpu());
  Linear linear = LinearConfig{100, 30}.Init();
  const MemoryStats after = GetMemoryStats(Device::Cpu());
  EXPECT_EQ(before.live_bytes, after.live_bytes);
  EXPECT_EQ(before.allocation_count, after.allocation_count);
  EXPECT_FALSE(linear.weight.is_initialized());
  EXPECT_EQ((Shape{100, 30}), linear.weight.lazy_shape());
  for (float v : linear.weight->to_data<float>()) {
    EXPECT_LE(std::abs(v), 1 / std::sqrt(100.0f));
  }
  for (float v : (*linear.bias)->to_data<float>()) {
    EXPECT_LE(std::abs(v), 1 / std::sqrt(100.0f));
  }
}

TEST(EmbeddingTest, ForwardLooksUpRows) {
  Embedding embedding{Fixed<2>({0, 0, 1, 1, 2, 2}, {3, 2})};
  const Tensor<2, Int> ids =
      Tensor<2, Int>::FromData<int64_t>({2, 0, 1, 2}, {2, 2});
  const Tensor<3> out = embedding.Forward(ids);
  EXPECT_EQ((Shape{2, 2, 2}), out.shape());
  ExpectNear({2, 2, 0, 0, 1, 1, 2, 2}, out.to_data<float>());
}

TEST(LayerNormTest, ForwardNormalizesTheLastDim) {
  LayerNorm norm{Fixed<1>({1, 2, 3}, {3}), Fixed<1>({0, 0, 1}, {3}), 1e-5};
  const std::vector<float> x = {1, 2, 3, -1, 0, 4};
  const std::vector<float> out =
      norm.Forward(Tensor<2>::FromData(x, {2, 3})).to_data<float>();
  const std::vector<float> gamma = {1, 2, 3}, beta = {0, 0, 1};
  for (int row = 0; row < 2; ++row) {
    double mean = 0, var = 0;
    for (int i = 0; i < 3; ++i) mean += x[row * 3 + i] / 3.0;
    for (int i = 0; i < 3; ++i) {
      var += (x[row * 3 + i] - mean) * (x[row * 3 + i] - mean) / 3.0;
    }
    for (int i = 0; i < 3; ++i) {
      const double expected =
          (x[row * 3 + i] - mean) / std::sqrt(var + 1e-5) * gamma[i] + beta[i];
      EXPECT_NEAR(expected, out[row * 3 + i], 1e-5);
    }
  }
}

TEST(BatchNormTest, TrainUsesBatchStatsAndUpdatesRunningStats) {
  BatchNorm<2> bn = BatchNormConfig{2, /*momentum=*/0.5}.Init<2>();
  EXPECT_FALSE(bn.running_mean.is_initialized());
  // Channel 0: {1, 3} (mean 2, biased var 1, unbiased 2); channel 1: {2, 2}.
  const Tensor<2> x = Tensor<2>::FromData<float>({1, 2, 3, 2}, {2, 2});
  const std::vector<float> out =
      bn.Forward(x, ForwardMode::kTraining).to_data<float>();
  const float scale = 1 / std::sqrt(1.0f + 1e-5f);
  ExpectNear({-scale, 0, scale, 0}, out);
  ExpectNear({1.0f, 1.0f},
             bn.running_mean.value().to_data<float>());  // .5*0+.5*m
  ExpectNear({1.5f, 0.5f},
             bn.running_var.value().to_data<float>());  // .5*1+.5*v
}

TEST(BatchNormTest, InferenceUsesRunningStats) {
  BatchNorm<4> bn = BatchNormConfig{1}.Init<4>();
  bn.running_mean.update(Tensor<1>::FromData<float>({2}, {1}));
  bn.running_var.update(Tensor<1>::FromData<float>({4}, {1}));
  const Tensor<4> x = Tensor<4>::FromData<float>({2, 4, 6, 0}, {1, 1, 2, 2});
  const float s = 1 / std::sqrt(4.0f + 1e-5f);
  ExpectNear({0, 2 * s, 4 * s, -2 * s},
             bn.Forward(x, ForwardMode::kInference).to_data<float>());
  // Inference leaves the running statistics alone.
  EXPECT_EQ(std::vector<float>{2}, bn.running_mean.value().to_data<float>());
  EXPECT_EQ(std::vector<float>{4}, bn.running_var.value().to_data<float>());
}

// Direct convolution: out[n][o][y][x] = b[o] + sum_c,i,j w[o][c][i][j] *
// in[n][c][y*s - p + i*d][x*s - p + j*d] (zero outside).
std::vector<float> NaiveConv(const std::vector<float>& in,
                             const Shape& in_shape, const std::vector<float>& w,
                             const Shape& w_shape, const std::vector<float>& b,
                             const Window2d& win, int64_t oh, int64_t ow) {
  const int64_t n = in_shape[0], c = in_shape[1], h = in_shape[2],
                wd = in_shape[3];
  const int64_t o = w_shape[0], kh = w_shape[2], kw = w_shape[3];
  std::vector<float> out(n * o * oh * ow);
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t oi = 0; oi < o; ++oi)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = b.empty() ? 0 : b[oi];
          for (int64_t ci = 0; ci < c; ++ci)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t yy =
                    y * win.stride[0] - win.padding[0] + i * win.dilation[0];
                const int64_t xx =
                    x * win.stride[1] - win.padding[1] + j * win.dilation[1];
                if (yy < 0 || yy >= h || xx < 0 || xx >= wd) continue;
                acc += w[((oi * c + ci) * kh + i) * kw + j] *
                       in[((ni * c + ci) * h + yy) * wd + xx];
              }
          out[((ni * o + oi) * oh + y) * ow + x] = static_cast<float>(acc);
        }
  return out;
}

TEST(Conv2dTest, MatchesDirectConvolutionWithStridePaddingDilation) {
  const Shape in_shape{2, 3, 7, 6};
  const Shape w_shape{4, 3, 3, 2};
  const std::vector<float> in = RandomValues(in_shape.num_elements(), 1);
  const std::vector<float> w = RandomValues(w_shape.num_elements(), 2);
  const std::vector<float> b = RandomValues(4, 3);
  const Window2d window{{3, 2}, {2, 1}, {1, 2}, {1, 2}};
  Conv2d conv{Fixed<4>(w, w_shape), Fixed<1>(b, {4}), window};
  const Tensor<4> out = conv.Forward(Tensor<4>::FromData(in, in_shape));
  const int64_t oh = window.OutputSize(0, 7), ow = window.OutputSize(1, 6);
  EXPECT_EQ((Shape{2, 4, oh, ow}), out.shape());
  ExpectNear(NaiveConv(in, in_shape, w, w_shape, b, window, oh, ow),
             out.to_data<float>(), 1e-4f);
}

TEST(Conv2dTest, ConfigInitIsLazyWithPyTorchFans) {
  Conv2d conv =
      Conv2dConfig{.in_channels = 3, .out_channels = 8, .kernel_size = {3, 3}}
          .Init();
  EXPECT_FALSE(conv.weight.is_initialized());
  EXPECT_EQ((Shape{8, 3, 3, 3}), conv.weight.lazy_shape());
  const float bound = 1 / std::sqrt(27.0f);
  for (float v : conv.weight->to_data<float>()) EXPECT_LE(std::abs(v), bound);
}

TEST(Pool2dTest, MaxAndAvgMatchReferenceWithPadding) {
  const Shape shape{1, 2, 5, 4};
  const std::vector<float> in = RandomValues(shape.num_elements(), 4);
  const Window2d window{{3, 2}, {2, 2}, {1, 1}};
  const Tensor<4> x = Tensor<4>::FromData(in, shape);
  const std::vector<float> max_out =
      MaxPool2d{window}.Forward(x).to_data<float>();
  const std::vector<float> avg_out =
      AvgPool2d{window}.Forward(x).to_data<float>();
  const int64_t oh = window.OutputSize(0, 5), ow = window.OutputSize(1, 4);
  ASSERT_EQ(static_cast<size_t>(2 * oh * ow), max_out.size());
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0;
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 2; ++j) {
            const int64_t yy = y * 2 - 1 + i, xx = x * 2 - 1 + j;
            if (yy < 0 || yy >= 5 || xx < 0 || xx >= 4) continue;
            best = std::max(best, in[(c * 5 + yy) * 4 + xx]);
            sum += in[(c * 5 + yy) * 4 + xx];
          }
        const int64_t at = (c * oh + y) * ow + x;
        EXPECT_EQ(best, max_out[at]);
        EXPECT_NEAR(sum / 6.0, avg_out[at], 1e-6);
      }
}

TEST(Pool2dTest, ConfigsBuildTheWindow) {
  const MaxPool2d max_pool =
      MaxPool2dConfig{.kernel_size = {2, 2}, .stride = {2, 2}}.Init();
  const AvgPool2d avg_pool = AvgPool2dConfig{.kernel_size = {2, 2}}.Init();
  EXPECT_EQ(2, max_pool.window.stride[1]);
  const Tensor<4> x = Tensor<4>::FromData<float>({1, 5, 2, 0}, {1, 1, 2, 2});
  EXPECT_EQ(std::vector<float>({5}), max_pool.Forward(x).to_data<float>());
  EXPECT_EQ(std::vector<float>({2}), avg_pool.Forward(x).to_data<float>());
  EXPECT_EQ(0.25, DropoutConfig{0.25}.Init().prob);
}

TEST(DropoutTest, TrainingZeroesAboutProbAndScalesTheRest) {
  PhiloxGenerator generator(11);
  const Tensor<1> x = Tensor<1>::Ones({10000});
  const std::vector<float> out =
      Dropout{0.25}
          .Forward(x, ForwardMode::kTraining, generator)
          .to_data<float>();
  int zeros = 0;
  for (float v : out) {
    if (v == 0) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(1 / 0.75f, v);
    }
  }
  EXPECT_NEAR(0.25, zeros / 10000.0, 0.02);
}

TEST(DropoutTest, InferenceIsIdentityAndDrawsNothing) {
  const Tensor<1> x = Tensor<1>::FromData<float>({1, 2, 3, 4}, {4});
  PhiloxGenerator generator(1);
  EXPECT_EQ(x.to_data<float>(),
            Dropout{0.5}
                .Forward(x, ForwardMode::kInference, generator)
                .to_data<float>());
  EXPECT_EQ(0u, generator.offset());
}

TEST(DropoutTest, TrainingIsReproducibleFromTheGeneratorState) {
  const Tensor<2> x = Tensor<2>::Ones({16, 16});
  PhiloxGenerator generator(5);
  const PhiloxState start = generator.state();
  const std::vector<float> first =
      Dropout{0.5}
          .Forward(x, ForwardMode::kTraining, generator)
          .to_data<float>();
  EXPECT_EQ(start.offset + 64, generator.offset());  // 256 elements / 4
  const std::vector<float> second =
      Dropout{0.5}
          .Forward(x, ForwardMode::kTraining, generator)
          .to_data<float>();
  EXPECT_NE(first, second);  // the generator moved on
  generator.set_state(start);
  EXPECT_EQ(first, Dropout{0.5}
                       .Forward(x, ForwardMode::kTraining, generator)
                       .to_data<float>());
}

// Dropout is x * mask with the mask recomputable from (seed, offset): what
// autodiff's backward multiplies the gradient by.
TEST(DropoutTest, OutputIsInputTimesTheRegeneratedMask) {
  PhiloxGenerator data(3);
  // A transposed (strided) input goes through the same mask.
  const Tensor<2> x = Tensor<2>::RandomNormal({24, 40}, data).t();
  PhiloxGenerator generator(21, /*offset=*/100);
  const Tensor<2> y =
      Dropout{0.3}.Forward(x, ForwardMode::kTraining, generator);
  const Tensor<2> mask(ops::DropoutMask(x.shape(), DType::kF32, Device::Cpu(),
                                        0.3, /*seed=*/21, /*offset=*/100));
  EXPECT_EQ((x * mask).to_data<float>(), y.to_data<float>());
}

TEST(ActivationTest, LayersApplyTheirFunction) {
  const Tensor<1> x = Tensor<1>::FromData<float>({-1, 0, 2}, {3});
  ExpectNear({0, 0, 2}, Relu{}.Forward(x).to_data<float>());
  ExpectNear({std::tanh(-1.0f), 0, std::tanh(2.0f)},
             Tanh{}.Forward(x).to_data<float>());
  ExpectNear({1 / (1 + std::exp(1.0f)), 0.5f, 1 / (1 + std::exp(-2.0f))},
             Sigmoid{}.Forward(x).to_data<float>());
  ExpectNear({-0.158655f, 0, 1.954500f}, Gelu{}.Forward(x).to_data<float>());
}

}  // namespace
}  // namespace kindling::nn
