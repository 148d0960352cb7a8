// The fused layer norm (ops::LayerNorm / LayerNormBackward on
// Backend::LayerNorm / LayerNormBackward, and nn::LayerNormOp's one node)
// against the composed formula computed here in double on the host: forward,
// statistics and every gradient, f32 and f64, over shapes that cover one
// feature, rows not a multiple of the vector width, no rows, long rows,
// rank 3 and non-contiguous inputs; finite differences for every subset of
// {input, gamma, beta} that requires grad; the fake cuda device giving the
// CPU's bits; the column sums independent of the thread count; and bad
// operands aborting with the op's message.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <span>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/nn/normalize.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/layer_norm_ops.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "tests/autodiff/gradcheck.h"
#include "tests/support/fake_cuda.h"

namespace kindling {
namespace {

using testing::GetFakeCudaCounters;
using testing::ResetFakeCudaCounters;
using testing::ToDoubles;

constexpr double kEpsilon = 1e-5;

// --- The reference: the composed formula in double -------------------------

struct Reference {
  std::vector<double> output, mean, rstd;
  std::vector<double> input_grad, gamma_grad, beta_grad;
};

// ComposedLayerNorm() is the forward and backward of layer norm over rows of
// `d`, the textbook way (mean, centered, variance, rstd, scale, shift; the
// backward's closed form), in double.
Reference ComposedLayerNorm(const std::vector<double>& x,
                            const std::vector<double>& gamma,
                            const std::vector<double>& beta,
                            const std::vector<double>& dy, int64_t d) {
  const int64_t rows = d == 0 ? 0 : static_cast<int64_t>(x.size()) / d;
  Reference ref;
  ref.output.resize(x.size());
  ref.input_grad.resize(x.size());
  ref.gamma_grad.assign(d, 0.0);
  ref.beta_grad.assign(d, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * d;
    const double* g_row = dy.data() + r * d;
    double mean = 0;
    for (int64_t j = 0; j < d; ++j) mean += row[j];
    mean /= d;
    double variance = 0;
    for (int64_t j = 0; j < d; ++j) {
      variance += (row[j] - mean) * (row[j] - mean);
    }
    variance /= d;
    const double rstd = 1 / std::sqrt(variance + kEpsilon);
    ref.mean.push_back(mean);
    ref.rstd.push_back(rstd);
    double mean_g = 0, mean_g_xhat = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double xhat = (row[j] - mean) * rstd;
      ref.output[r * d + j] = xhat * gamma[j] + beta[j];
      mean_g += g_row[j] * gamma[j];
      mean_g_xhat += g_row[j] * gamma[j] * xhat;
      ref.gamma_grad[j] += g_row[j] * xhat;
      ref.beta_grad[j] += g_row[j];
    }
    mean_g /= d;
    mean_g_xhat /= d;
    for (int64_t j = 0; j < d; ++j) {
      const double xhat = (row[j] - mean) * rstd;
      ref.input_grad[r * d + j] =
          rstd * (g_row[j] * gamma[j] - mean_g - xhat * mean_g_xhat);
    }
  }
  return ref;
}

// --- Forward and backward against the reference ----------------------------

struct LayerNormCase {
  Shape shape;
  DType dtype;
};

void PrintTo(const LayerNormCase& c, std::ostream* os) {
  *os << c.shape.ToString() << " " << DTypeName(c.dtype);
}

class LayerNormKernelTest : public ::testing::TestWithParam<LayerNormCase> {
 protected:
  TensorBase Random(const Shape& shape, double mean = 0, double stddev = 1) {
    return ops::RandomNormal(shape, GetParam().dtype, Device::Cpu(), generator_,
                             mean, stddev);
  }
  int64_t Features() const {
    const Shape& shape = GetParam().shape;
    return shape[shape.rank() - 1];
  }
  // The kernels and the reference sum in different orders (and f32 rounds
  // every element), relative to the largest value compared.
  double Tolerance() const {
    return GetParam().dtype == DType::kF64 ? 1e-11 : 5e-5;
  }
  void ExpectClose(const std::vector<double>& want, const TensorBase& got,
                   const char* what) {
    const std::vector<double> values = ToDoubles(got);
    ASSERT_EQ(want.size(), values.size()) << what;
    double scale = 1;
    for (double x : want) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(want[i], values[i], Tolerance() * scale)
          << what << " element " << i;
    }
  }
  PhiloxGenerator generator_{7};
};

TEST_P(LayerNormKernelTest, ForwardAndBackwardMatchTheComposedFormula) {
  const LayerNormCase& c = GetParam();
  const int64_t d = Features();
  // An offset mean: a one-pass E[x^2] - E[x]^2 would lose most digits here.
  const TensorBase x = Random(c.shape, 100, 2);
  const TensorBase gamma = Random({d}, 1, 0.5);
  const TensorBase beta = Random({d});
  const TensorBase dy = Random(c.shape);
  const Reference ref = ComposedLayerNorm(ToDoubles(x), ToDoubles(gamma),
                                          ToDoubles(beta), ToDoubles(dy), d);

  const ops::LayerNormResult y = ops::LayerNorm(x, gamma, beta, kEpsilon);
  EXPECT_EQ(c.shape, y.output.shape());
  EXPECT_EQ(c.dtype, y.output.dtype());
  ExpectClose(ref.output, y.output, "output");
  ExpectClose(ref.mean, y.mean, "mean");
  ExpectClose(ref.rstd, y.rstd, "rstd");

  const ops::LayerNormGradients grads =
      ops::LayerNormBackward(dy, x, y.mean, y.rstd, gamma,
                             {.input = true, .gamma = true, .beta = true});
  EXPECT_EQ(c.shape, grads.input.shape());
  ExpectClose(ref.input_grad, grads.input, "input gradient");
  ExpectClose(ref.gamma_grad, grads.gamma, "gamma gradient");
  ExpectClose(ref.beta_grad, grads.beta, "beta gradient");

  // Each gradient alone is the same as all three together, bit for bit.
  const auto alone = [&](ops::LayerNormNeeds needs) {
    return ops::LayerNormBackward(dy, x, y.mean, y.rstd, gamma, needs);
  };
  EXPECT_EQ(ToDoubles(grads.input), ToDoubles(alone({.input = true}).input));
  EXPECT_EQ(ToDoubles(grads.gamma), ToDoubles(alone({.gamma = true}).gamma));
  EXPECT_EQ(ToDoubles(grads.beta), ToDoubles(alone({.beta = true}).beta));
}

TEST_P(LayerNormKernelTest, ReadsANonContiguousInput) {
  const LayerNormCase& c = GetParam();
  const int64_t d = Features();
  // The same values through a transposed view and as a packed copy.
  Shape swapped = c.shape;
  std::swap(swapped[0], swapped[swapped.rank() - 1]);
  const TensorBase view = Random(swapped).Transpose(0, swapped.rank() - 1);
  ASSERT_EQ(c.shape, view.shape());
  const TensorBase packed = view.Contiguous();
  const TensorBase gamma = Random({d});
  const TensorBase beta = Random({d});
  const ops::LayerNormResult a = ops::LayerNorm(view, gamma, beta, kEpsilon);
  const ops::LayerNormResult b = ops::LayerNorm(packed, gamma, beta, kEpsilon);
  EXPECT_EQ(ToDoubles(b.output), ToDoubles(a.output));
  const TensorBase dy = Random(swapped).Transpose(0, swapped.rank() - 1);
  const ops::LayerNormNeeds all{.input = true, .gamma = true, .beta = true};
  const ops::LayerNormGradients ga =
      ops::LayerNormBackward(dy, view, a.mean, a.rstd, gamma, all);
  const ops::LayerNormGradients gb = ops::LayerNormBackward(
      dy.Contiguous(), packed, b.mean, b.rstd, gamma, all);
  EXPECT_EQ(ToDoubles(gb.input), ToDoubles(ga.input));
  EXPECT_EQ(ToDoubles(gb.gamma), ToDoubles(ga.gamma));
  EXPECT_EQ(ToDoubles(gb.beta), ToDoubles(ga.beta));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LayerNormKernelTest,
    ::testing::Values(
        // One feature: every row normalizes to beta.
        LayerNormCase{{5, 1}, DType::kF32}, LayerNormCase{{5, 1}, DType::kF64},
        // Rows not a multiple of the vector width.
        LayerNormCase{{6, 7}, DType::kF32}, LayerNormCase{{3, 33}, DType::kF64},
        LayerNormCase{{4, 100}, DType::kF32},
        // Rank 3.
        LayerNormCase{{2, 3, 17}, DType::kF32},
        LayerNormCase{{2, 3, 17}, DType::kF64},
        // Long rows, and enough rows to split forward and backward over
        // threads and the column sums over many chunks.
        LayerNormCase{{6, 4096}, DType::kF32},
        LayerNormCase{{300, 1024}, DType::kF32},
        // Above 4 MiB the float outputs stream (non-temporal stores), here
        // from rows that do not start on a 32-byte boundary.
        LayerNormCase{{1100, 1001}, DType::kF32},
        LayerNormCase{{130, 520}, DType::kF64}));

// --- No rows, no features, no parameters -----------------------------------

TEST(LayerNormKernelTest, NoRowsGiveAnEmptyOutputAndZeroParameterGradients) {
  const TensorBase x = TensorBase::Empty({0, 4}, DType::kF32, Device::Cpu());
  const TensorBase gamma = ops::Full({4}, 2.0, DType::kF32, Device::Cpu());
  const TensorBase beta = ops::Full({4}, 1.0, DType::kF32, Device::Cpu());
  const ops::LayerNormResult y = ops::LayerNorm(x, gamma, beta, kEpsilon);
  EXPECT_EQ((Shape{0, 4}), y.output.shape());
  EXPECT_EQ((Shape{0}), y.mean.shape());
  const ops::LayerNormGradients grads =
      ops::LayerNormBackward(y.output, x, y.mean, y.rstd, gamma,
                             {.input = true, .gamma = true, .beta = true});
  EXPECT_EQ((Shape{0, 4}), grads.input.shape());
  EXPECT_EQ(std::vector<double>(4, 0.0), ToDoubles(grads.gamma));
  EXPECT_EQ(std::vector<double>(4, 0.0), ToDoubles(grads.beta));
}

TEST(LayerNormKernelTest, EmptyInputThroughTheLayerGivesZeroGradients) {
  const TensorBase x = TensorBase::Empty({2, 0, 3}, DType::kF32, Device::Cpu())
                           .set_require_grad(true);
  const TensorBase gamma =
      ops::Full({3}, 1.0, DType::kF32, Device::Cpu()).set_require_grad(true);
  const TensorBase beta =
      ops::Full({3}, 0.0, DType::kF32, Device::Cpu()).set_require_grad(true);
  const TensorBase y = nn::LayerNormOp(x, gamma, beta, kEpsilon);
  EXPECT_EQ((Shape{2, 0, 3}), y.shape());
  BackwardOptions options;
  options.grad_output = ops::Full(y.shape(), 1.0, DType::kF32, Device::Cpu());
  const Gradients grads = Backward(y, options);
  ASSERT_TRUE(grads.Get(gamma.leaf_id()).has_value());
  EXPECT_EQ(std::vector<double>(3, 0.0),
            ToDoubles(*grads.Get(gamma.leaf_id())));
  EXPECT_EQ(std::vector<double>(3, 0.0), ToDoubles(*grads.Get(beta.leaf_id())));
}

// One feature: every row is its own mean, so xhat is 0, the output is beta
// and the input gradient is exactly 0 (rstd = 1/sqrt(eps) ~ 316 would blow
// any rounding in x - mean up into a visible gradient).
TEST(LayerNormKernelTest, OneFeatureGivesBetaAndAnExactlyZeroInputGradient) {
  PhiloxGenerator generator(5);
  for (DType dtype : {DType::kF32, DType::kF64}) {
    const TensorBase x =
        ops::RandomUniform({37, 1}, dtype, Device::Cpu(), generator, 3, 7);
    const TensorBase gamma = ops::Full({1}, 1.25, dtype, Device::Cpu());
    const TensorBase beta = ops::Full({1}, -0.5, dtype, Device::Cpu());
    const TensorBase dy =
        ops::RandomNormal({37, 1}, dtype, Device::Cpu(), generator, 0, 1);
    const ops::LayerNormResult y = ops::LayerNorm(x, gamma, beta, kEpsilon);
    EXPECT_EQ(std::vector<double>(37, -0.5), ToDoubles(y.output))
        << DTypeName(dtype);
    EXPECT_EQ(ToDoubles(x), ToDoubles(y.mean)) << DTypeName(dtype);
    const ops::LayerNormGradients grads =
        ops::LayerNormBackward(dy, x, y.mean, y.rstd, gamma, {.input = true});
    EXPECT_EQ(std::vector<double>(37, 0.0), ToDoubles(grads.input))
        << DTypeName(dtype);
  }
}

TEST(LayerNormKernelTest, NoFeaturesGiveNaNStatistics) {
  const TensorBase x = TensorBase::Empty({3, 0}, DType::kF64, Device::Cpu());
  const ops::LayerNormResult y =
      ops::LayerNorm(x, TensorBase(), TensorBase(), kEpsilon);
  EXPECT_EQ((Shape{3, 0}), y.output.shape());
  for (double mean : ToDoubles(y.mean)) EXPECT_TRUE(std::isnan(mean));
}

TEST(LayerNormKernelTest, UndefinedGammaAndBetaAreOnesAndZeros) {
  PhiloxGenerator generator(3);
  const TensorBase x =
      ops::RandomNormal({7, 19}, DType::kF64, Device::Cpu(), generator, 0, 1);
  const TensorBase dy =
      ops::RandomNormal({7, 19}, DType::kF64, Device::Cpu(), generator, 0, 1);
  const TensorBase ones = ops::Full({19}, 1.0, DType::kF64, Device::Cpu());
  const TensorBase zeros = ops::Full({19}, 0.0, DType::kF64, Device::Cpu());
  const ops::LayerNormResult with = ops::LayerNorm(x, ones, zeros, kEpsilon);
  const ops::LayerNormResult without =
      ops::LayerNorm(x, TensorBase(), TensorBase(), kEpsilon);
  EXPECT_EQ(ToDoubles(with.output), ToDoubles(without.output));
  const ops::LayerNormNeeds all{.input = true, .gamma = true, .beta = true};
  EXPECT_EQ(
      ToDoubles(
          ops::LayerNormBackward(dy, x, with.mean, with.rstd, ones, all).input),
      ToDoubles(ops::LayerNormBackward(dy, x, without.mean, without.rstd,
                                       TensorBase(), all)
                    .input));
}

// --- Half precision: computed in f32, rounded back --------------------------

TEST(LayerNormKernelTest, HalfInputsComputeInFloat) {
  PhiloxGenerator generator(5);
  const TensorBase x32 =
      ops::RandomNormal({4, 40}, DType::kF32, Device::Cpu(), generator, 0, 1);
  const TensorBase gamma32 =
      ops::RandomNormal({40}, DType::kF32, Device::Cpu(), generator, 1, 0.1);
  const TensorBase beta32 = ops::Full({40}, 0.5, DType::kF32, Device::Cpu());
  for (DType half : {DType::kF16, DType::kBF16}) {
    const TensorBase x = x32.To(half);
    const ops::LayerNormResult y =
        ops::LayerNorm(x, gamma32.To(half), beta32.To(half), kEpsilon);
    EXPECT_EQ(half, y.output.dtype());
    EXPECT_EQ(DType::kF32, y.mean.dtype());
    // The f32 computation on the rounded inputs, rounded once.
    const ops::LayerNormResult want =
        ops::LayerNorm(x.To(DType::kF32), gamma32.To(half).To(DType::kF32),
                       beta32.To(half).To(DType::kF32), kEpsilon);
    EXPECT_EQ(ToDoubles(want.output.To(half)), ToDoubles(y.output));
  }
}

// --- Finite differences -----------------------------------------------------

using Inputs = std::span<const TensorBase>;

TEST(LayerNormGradcheckTest, EverySubsetOfOperandsRequiringGrad) {
  for (int mask = 1; mask < 8; ++mask) {
    Generator generator(40 + mask);
    std::vector<TensorBase> inputs = {
        testing::RandomLeaf({2, 3, 6}, generator),
        testing::RandomLeaf({6}, generator, 0.5, 2),
        testing::RandomLeaf({6}, generator)};
    for (int k = 0; k < 3; ++k) {
      if ((mask >> k & 1) == 0) inputs[k] = inputs[k].set_require_grad(false);
    }
    EXPECT_TRUE(testing::Gradcheck(
        [](Inputs x) { return nn::LayerNormOp(x[0], x[1], x[2], kEpsilon); },
        inputs))
        << "operands requiring grad (input, gamma, beta bits): " << mask;
  }
}

TEST(LayerNormGradcheckTest, TransposedInputAndLongRows) {
  Generator generator(50);
  EXPECT_TRUE(testing::Gradcheck(
      [](Inputs x) {
        return nn::LayerNormOp(x[0].Transpose(0, 1), x[1], x[2], kEpsilon);
      },
      {testing::RandomLeaf({37, 3}, generator),
       testing::RandomLeaf({37}, generator),
       testing::RandomLeaf({37}, generator)}));
}

TEST(LayerNormGradcheckTest, RecordsOneNode) {
  Generator generator(51);
  const TensorBase y =
      nn::LayerNormOp(testing::RandomLeaf({2, 4}, generator),
                      testing::RandomLeaf({4}, generator),
                      testing::RandomLeaf({4}, generator), kEpsilon);
  ASSERT_NE(nullptr, y.autodiff_meta());
  EXPECT_STREQ("layer_norm", y.autodiff_meta()->node->name());
}

// --- The column sums do not depend on the thread count ----------------------

std::vector<double> ParameterGradients(int threads) {
  omp_set_num_threads(threads);
  PhiloxGenerator generator(9);
  const TensorBase x = ops::RandomNormal({1000, 96}, DType::kF32, Device::Cpu(),
                                         generator, 0, 1);
  const TensorBase dy = ops::RandomNormal({1000, 96}, DType::kF32,
                                          Device::Cpu(), generator, 0, 1);
  const TensorBase gamma = ops::Full({96}, 1.5, DType::kF32, Device::Cpu());
  const ops::LayerNormResult y =
      ops::LayerNorm(x, gamma, TensorBase(), kEpsilon);
  const ops::LayerNormGradients grads =
      ops::LayerNormBackward(dy, x, y.mean, y.rstd, gamma,
                             {.input = true, .gamma = true, .beta = true});
  std::vector<double> all = ToDoubles(grads.gamma);
  for (double v : ToDoubles(grads.beta)) all.push_back(v);
  for (double v : ToDoubles(grads.input)) all.push_back(v);
  return all;
}

TEST(LayerNormKernelTest, SameGradientsForOneAndThreeThreads) {
  const int saved = omp_get_max_threads();
  const std::vector<double> one = ParameterGradients(1);
  const std::vector<double> three = ParameterGradients(3);
  omp_set_num_threads(saved);
  EXPECT_TRUE(one == three);
}

// --- The fake cuda device
// -----------------------------------------------------

TEST(LayerNormKernelTest, FakeCudaDeviceGivesTheCpuResults) {
  PhiloxGenerator generator(11);
  const Device cpu = Device::Cpu();
  const Device cuda = Device::Cuda(0);
  const TensorBase x =
      ops::RandomNormal({5, 3, 70}, DType::kF32, cpu, generator, 0, 1);
  const TensorBase gamma =
      ops::RandomNormal({70}, DType::kF32, cpu, generator, 1, 0.2);
  const TensorBase beta =
      ops::RandomNormal({70}, DType::kF32, cpu, generator, 0, 1);
  const TensorBase dy =
      ops::RandomNormal({5, 3, 70}, DType::kF32, cpu, generator, 0, 1);
  // Forward and backward through the layer's node on each device.
  const auto run = [&](const Device& device) {
    const TensorBase x_leaf = x.ToDevice(device).set_require_grad(true);
    const TensorBase gamma_leaf = gamma.ToDevice(device).set_require_grad(true);
    const TensorBase beta_leaf = beta.ToDevice(device).set_require_grad(true);
    const TensorBase y =
        nn::LayerNormOp(x_leaf, gamma_leaf, beta_leaf, kEpsilon);
    EXPECT_EQ(device, y.device());
    BackwardOptions options;
    options.grad_output = dy.ToDevice(device);
    const Gradients grads = Backward(y, options);
    std::vector<std::vector<double>> all = {ToDoubles(y.ToDevice(cpu))};
    for (const TensorBase* leaf : {&x_leaf, &gamma_leaf, &beta_leaf}) {
      std::optional<TensorBase> g = grads.Get(leaf->leaf_id());
      EXPECT_TRUE(g.has_value());
      if (!g.has_value()) return all;
      EXPECT_EQ(device, g->device());
      all.push_back(ToDoubles(g->ToDevice(cpu)));
    }
    return all;
  };
  const std::vector<std::vector<double>> on_cpu = run(cpu);
  ResetFakeCudaCounters();
  const std::vector<std::vector<double>> on_cuda = run(cuda);
  EXPECT_GE(GetFakeCudaCounters().kernel_calls, 2);
  ASSERT_EQ(4u, on_cuda.size());
  for (size_t k = 0; k < on_cpu.size(); ++k) {
    EXPECT_EQ(on_cpu[k], on_cuda[k]) << "result " << k;
  }
}

// --- Bad operands -----------------------------------------------------------

TEST(LayerNormKernelDeathTest, GammaOfTheWrongShapeIsNamed) {
  const TensorBase x = TensorBase::Empty({2, 3}, DType::kF32, Device::Cpu());
  const TensorBase gamma = TensorBase::Empty({4}, DType::kF32, Device::Cpu());
  const TensorBase beta = TensorBase::Empty({3}, DType::kF32, Device::Cpu());
  EXPECT_DEATH(ops::LayerNorm(x, gamma, beta, kEpsilon),
               "layer_norm: input \\[2, 3\\] needs gamma of \\[3\\], got "
               "\\[4\\]");
  EXPECT_DEATH(nn::LayerNormOp(x, gamma, beta, kEpsilon),
               "layer_norm: input \\[2, 3\\] needs gamma and beta of \\[3\\], "
               "got \\[4\\] and \\[3\\]");
}

TEST(LayerNormKernelDeathTest, ParameterOfAnotherDTypeIsNamed) {
  const TensorBase x = TensorBase::Empty({2, 3}, DType::kF32, Device::Cpu());
  const TensorBase beta = TensorBase::Empty({3}, DType::kF64, Device::Cpu());
  EXPECT_DEATH(ops::LayerNorm(x, TensorBase(), beta, kEpsilon),
               "layer_norm: beta is f64 on cpu, the input f32 on cpu");
}

TEST(LayerNormKernelDeathTest, IntegerInputIsNamed) {
  const TensorBase x = TensorBase::Empty({2, 3}, DType::kI64, Device::Cpu());
  EXPECT_DEATH(ops::LayerNorm(x, TensorBase(), TensorBase(), kEpsilon),
               "layer_norm: needs a floating-point tensor");
}

TEST(LayerNormKernelDeathTest, StatisticsOfAnotherInputAreNamed) {
  const TensorBase x = ops::Full({2, 3}, 1.0, DType::kF32, Device::Cpu());
  const ops::LayerNormResult y =
      ops::LayerNorm(x, TensorBase(), TensorBase(), kEpsilon);
  const TensorBase other = ops::Full({3, 3}, 1.0, DType::kF32, Device::Cpu());
  EXPECT_DEATH(ops::LayerNormBackward(other, other, y.mean, y.rstd,
                                      TensorBase(), {.input = true}),
               "layer_norm backward: statistics f32\\[2\\] do not fit input "
               "f32\\[3, 3\\]");
}

}  // namespace
}  // namespace kindling
