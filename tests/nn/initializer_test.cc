#include "kindling/module/initializer.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

// Sample() is the initializer's values for `seed`, on the host.
std::vector<float> Sample(const Initializer& init, const Shape& shape,
                          std::optional<int64_t> fan_in,
                          std::optional<int64_t> fan_out, uint64_t seed) {
  const TensorBase tensor = init.Sample(shape, fan_in, fan_out, seed);
  EXPECT_EQ(DType::kF32, tensor.dtype());
  std::vector<float> values(tensor.numel());
  tensor.CopyToHost(values.data());
  return values;
}

double Mean(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += v;
  return sum / values.size();
}

double StdDev(const std::vector<float>& values) {
  const double mean = Mean(values);
  double sum = 0;
  for (float v : values) sum += (v - mean) * (v - mean);
  return std::sqrt(sum / values.size());
}

TEST(InitializerTest, InitAllocatesNothingUntilRead) {
  ResetMemoryStats(Device::Cpu());
  const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
  Param<Tensor<2>> param =
      Initializer::Normal(0, 1).Init<2>({256, 256}, Device::Cpu());
  EXPECT_FALSE(param.is_initialized());
  EXPECT_EQ(before, GetMemoryStats(Device::Cpu()).live_bytes);
  EXPECT_EQ((Shape{256, 256}), param->shape());
  EXPECT_EQ(before + 256 * 256 * 4, GetMemoryStats(Device::Cpu()).live_bytes);
}

TEST(InitializerTest, ConstantZerosOnes) {
  EXPECT_EQ(std::vector<float>(3, 2.5f),
            Sample(Initializer::Constant(2.5), {3}, {}, {}, 1));
  EXPECT_EQ(std::vector<float>(2, 0.0f),
            Sample(Initializer::Zeros(), {2}, {}, {}, 1));
  EXPECT_EQ(std::vector<float>(2, 1.0f),
            Sample(Initializer::Ones(), {2}, {}, {}, 1));
}

TEST(InitializerTest, SameSeedSameValuesDifferentSeedDifferentValues) {
  const Initializer init = Initializer::Uniform(-1, 1);
  EXPECT_EQ(Sample(init, {64}, {}, {}, 7), Sample(init, {64}, {}, {}, 7));
  EXPECT_NE(Sample(init, {64}, {}, {}, 7), Sample(init, {64}, {}, {}, 8));
}

// The random kinds are one backend fill from PhiloxGenerator(seed): the
// same values Tensor::Random* gives for that generator.
TEST(InitializerTest, RandomKindsArePhiloxFillsOfTheirSeed) {
  PhiloxGenerator uniform_generator(7);
  EXPECT_EQ(
      Tensor<1>::RandomUniform({64}, uniform_generator, -1, 1).to_data<float>(),
      Sample(Initializer::Uniform(-1, 1), {64}, {}, {}, 7));
  PhiloxGenerator normal_generator(8);
  EXPECT_EQ(Tensor<2>::RandomNormal({8, 9}, normal_generator, 0.5, 2)
                .to_data<float>(),
            Sample(Initializer::Normal(0.5, 2), {8, 9}, {}, {}, 8));
}

TEST(InitializerTest, LazyParamIsItsSampleAtItsSeed) {
  SetInitSeed(99);
  const uint64_t seed = NextInitSeed();
  SetInitSeed(99);
  Param<Tensor<2>> param =
      Initializer::KaimingNormal(1.0).Init<2>({16, 4}, Device::Cpu(), 16);
  EXPECT_EQ(Sample(Initializer::KaimingNormal(1.0), {16, 4}, 16, {}, seed),
            param->to_data<float>());
}

TEST(InitializerTest, ValuesDoNotDependOnTheOrderParamsAreRead) {
  SetInitSeed(123);
  Param<Tensor<1>> a = Initializer::Normal(0, 1).Init<1>({4}, Device::Cpu());
  Param<Tensor<1>> b = Initializer::Normal(0, 1).Init<1>({4}, Device::Cpu());
  const std::vector<float> b_first = b->to_data<float>();
  const std::vector<float> a_second = a->to_data<float>();

  SetInitSeed(123);
  Param<Tensor<1>> a2 = Initializer::Normal(0, 1).Init<1>({4}, Device::Cpu());
  Param<Tensor<1>> b2 = Initializer::Normal(0, 1).Init<1>({4}, Device::Cpu());
  EXPECT_EQ(a_second, a2->to_data<float>());
  EXPECT_EQ(b_first, b2->to_data<float>());
}

TEST(InitializerTest, UniformStaysInBounds) {
  for (float v : Sample(Initializer::Uniform(2, 3), {1000}, {}, {}, 3)) {
    EXPECT_GE(v, 2.0f);
    EXPECT_LT(v, 3.0f);
  }
}

TEST(InitializerTest, NormalHasTheRequestedMoments) {
  const std::vector<float> values =
      Sample(Initializer::Normal(5, 2), {20000}, {}, {}, 4);
  EXPECT_NEAR(5.0, Mean(values), 0.05);
  EXPECT_NEAR(2.0, StdDev(values), 0.05);
}

TEST(InitializerTest, KaimingUniformBoundUsesFanIn) {
  // gain 1/sqrt(3) and fan_in 100: bound = sqrt(3/100)/sqrt(3) = 0.1.
  const std::vector<float> values = Sample(
      Initializer::KaimingUniform(1 / std::sqrt(3.0)), {100, 50}, 100, 50, 5);
  float max_abs = 0;
  for (float v : values) max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, 0.1f);
  EXPECT_GT(max_abs, 0.099f);
}

TEST(InitializerTest, KaimingNormalFanOutOnlyUsesFanOut) {
  const std::vector<float> values =
      Sample(Initializer::KaimingNormal(2.0, /*fan_out_only=*/true), {200, 100},
             std::nullopt, 400, 6);
  EXPECT_NEAR(2.0 / std::sqrt(400.0), StdDev(values), 0.003);
}

TEST(InitializerTest, XavierUsesBothFans) {
  const std::vector<float> uniform =
      Sample(Initializer::XavierUniform(1.0), {300, 300}, 200, 100, 7);
  const double bound = std::sqrt(6.0 / 300.0);
  for (float v : uniform) EXPECT_LE(std::abs(v), bound);
  const std::vector<float> normal =
      Sample(Initializer::XavierNormal(1.0), {300, 300}, 200, 100, 8);
  EXPECT_NEAR(std::sqrt(2.0 / 300.0), StdDev(normal), 0.002);
}

TEST(InitializerTest, OrthogonalRowsAreOrthonormal) {
  for (const Shape& shape : {Shape{4, 10}, Shape{10, 4}, Shape{3, 2, 2}}) {
    const int64_t rows = shape[0];
    const int64_t cols = shape.num_elements() / rows;
    const std::vector<float> q =
        Sample(Initializer::Orthogonal(1.0), shape, {}, {}, 9);
    // The smaller side is orthonormal: Q Q^T = I (rows) or Q^T Q = I (cols).
    const bool by_rows = rows <= cols;
    const int64_t n = by_rows ? rows : cols;
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = 0; b < n; ++b) {
        double dot = 0;
        for (int64_t k = 0; k < (by_rows ? cols : rows); ++k) {
          dot += by_rows ? q[a * cols + k] * q[b * cols + k]
                         : q[k * cols + a] * q[k * cols + b];
        }
        EXPECT_NEAR(a == b ? 1.0 : 0.0, dot, 1e-5) << shape << " " << a << b;
      }
    }
  }
}

TEST(InitializerDeathTest, KaimingWithoutFanInAbortsNamingTheFan) {
  EXPECT_DEATH(Initializer::KaimingUniform(1.0).Init<2>({2, 2}, Device::Cpu()),
               "KaimingUniform\\(gain=1, fan_out_only=false\\) needs fan_in");
}

TEST(InitializerDeathTest, XavierWithoutFanOutAborts) {
  EXPECT_DEATH(Initializer::XavierNormal(1.0).Init<2>({2, 2}, Device::Cpu(), 2),
               "needs both fan_in and fan_out");
}

TEST(InitializerDeathTest, OrthogonalOfAVectorAborts) {
  EXPECT_DEATH(Initializer::Orthogonal(1.0).Init<1>({4}, Device::Cpu()),
               "needs a shape of rank >= 2");
}

TEST(InitializerTest, ToStringNamesKindAndArguments) {
  EXPECT_EQ("Normal(mean=0, std=0.02)",
            Initializer::Normal(0, 0.02).ToString());
  EXPECT_EQ("XavierUniform(gain=1)", Initializer::XavierUniform(1).ToString());
}

}  // namespace
}  // namespace kindling
