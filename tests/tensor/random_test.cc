// Counter-based random fills: Philox4x32-10 against the published known
// answers, the CPU kernel against the stream philox.h specifies, the
// distributions' moments, and the reproducibility promises (thread count,
// split fills, saved generator state, output dtype).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/box_muller.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

// --- Philox4x32-10 ---------------------------------------------------------

// Known answers from the Random123 distribution (kat_vectors, philox4x32 10
// rounds); also derivable by hand from the round function in the paper.
TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  EXPECT_EQ((PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}),
            Philox4x32_10({0, 0, 0, 0}, {0, 0}));
  EXPECT_EQ((PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}),
            Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}));
  EXPECT_EQ((PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}),
            Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}));
}

// constexpr, so a backend can check its own copy at compile time.
static_assert(Philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);

TEST(PhiloxTest, BitMappingsCoverTheirIntervals) {
  EXPECT_EQ(0.0f, UniformFloat(0));
  EXPECT_EQ(1.0f - 0x1p-24f, UniformFloat(0xffffffff));
  EXPECT_EQ(0x1p-24f, OpenUniformFloat(0));
  EXPECT_EQ(1.0f, OpenUniformFloat(0xffffffff));
  EXPECT_EQ(0.0, UniformDouble(0, 0));
  EXPECT_EQ(1.0 - 0x1p-53, UniformDouble(0xffffffff, 0xffffffff));
  EXPECT_EQ(0x1p-53, OpenUniformDouble(0, 0));
  EXPECT_EQ(0x1p-53, UniformDouble(0, 0x800));  // bit 11: the lowest used
  EXPECT_EQ(0x1p-32, UniformDouble(1, 0));      // high word first
  EXPECT_EQ(0u, KeepThreshold(0));
  EXPECT_EQ(1u << 23, KeepThreshold(0.5));
  EXPECT_EQ(1u, KeepThreshold(0x1p-30));  // rounds up: u >= p
}

// Word `index` of the stream (seed, offset), computed on the host.
uint32_t Word(uint64_t seed, uint64_t offset, int64_t index) {
  return Philox4x32_10(PhiloxCounter(offset + index / 4),
                       PhiloxKeyFromSeed(seed))[index % 4];
}

template <class T>
std::vector<T> Values(const TensorBase& tensor) {
  std::vector<T> values(tensor.numel());
  tensor.CopyToHost(values.data());
  return values;
}

// --- The CPU kernel follows philox.h word for word --------------------------

TEST(RandomFillTest, UniformF32IsTheSpecifiedMapping) {
  PhiloxGenerator generator(0x1234, /*offset=*/77);
  const int64_t n = 1001;
  const auto values = Values<float>(
      ops::RandomUniform({n}, DType::kF32, Device::Cpu(), generator, 0, 1));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(UniformFloat(Word(0x1234, 77, i)), values[i]) << "at " << i;
  }
}

TEST(RandomFillTest, UniformF64UsesTwoWordsPerElement) {
  PhiloxGenerator generator(99);
  const int64_t n = 301;
  const auto values = Values<double>(
      ops::RandomUniform({n}, DType::kF64, Device::Cpu(), generator, -1, 3));
  for (int64_t i = 0; i < n; ++i) {
    const double u = UniformDouble(Word(99, 0, 2 * i), Word(99, 0, 2 * i + 1));
    ASSERT_EQ(-1 + u * 4, values[i]) << "at " << i;
  }
  EXPECT_EQ(151u, generator.offset());  // ceil(301 / 2) blocks
}

TEST(RandomFillTest, NormalF32IsBoxMullerOnWordPairs) {
  PhiloxGenerator generator(5);
  const int64_t n = 999;  // odd: the last element keeps only the first
  const auto values = Values<float>(
      ops::RandomNormal({n}, DType::kF32, Device::Cpu(), generator, 1, 2));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pair = i / 2;
    float first, second;
    BoxMullerFloat(Word(5, 0, 2 * pair), Word(5, 0, 2 * pair + 1), first,
                   second);
    ASSERT_EQ(1 + 2 * (i % 2 == 0 ? first : second), values[i]) << i;
  }
  EXPECT_EQ(250u, generator.offset());
}

// Kindling's float log and sincos against libm in double, over every input
// class Box-Muller feeds them (and a dense sweep).
TEST(BoxMullerTest, LogAndSinCosAreWithinAFewUlp) {
  double worst_log = 0, worst_trig = 0;
  for (uint32_t k = 0; k < (1u << 24); k += 97) {
    const float open = OpenUniformFloat(k << 8);
    const double exact_log = std::log(static_cast<double>(open));
    const double log_error = std::abs(KindlingLog(open) - exact_log);
    // Relative to the result, but never finer than float's ulp at 1.
    worst_log =
        std::max(worst_log, log_error / std::max(std::abs(exact_log), 0x1p-24));
    const float u = UniformFloat(k << 8);
    float sine, cosine;
    KindlingSinCos2Pi(u, sine, cosine);
    const double angle = 2 * std::numbers::pi * u;
    worst_trig =
        std::max(worst_trig, std::max(std::abs(sine - std::sin(angle)),
                                      std::abs(cosine - std::cos(angle))));
  }
  EXPECT_LT(worst_log, 4 * 0x1p-24);  // a few float ulp, relative
  // Absolute: the angle 2 pi u itself is rounded to float first.
  EXPECT_LT(worst_trig, 4 * 0x1p-24);
  EXPECT_EQ(0.0f, KindlingLog(1.0f));
  EXPECT_NEAR(-16.635532333, KindlingLog(0x1p-24f), 1e-5);
}

TEST(RandomFillTest, NormalF64UsesOneBlockPerPair) {
  PhiloxGenerator generator(6, /*offset=*/3);
  const auto values = Values<double>(
      ops::RandomNormal({10}, DType::kF64, Device::Cpu(), generator, 0, 1));
  for (int64_t pair = 0; pair < 5; ++pair) {
    const PhiloxBlock w =
        Philox4x32_10(PhiloxCounter(3 + pair), PhiloxKeyFromSeed(6));
    const double radius =
        std::sqrt(-2.0 * std::log(OpenUniformDouble(w[0], w[1])));
    const double angle = 2 * std::numbers::pi * UniformDouble(w[2], w[3]);
    EXPECT_NEAR(radius * std::cos(angle), values[2 * pair], 1e-14);
    EXPECT_NEAR(radius * std::sin(angle), values[2 * pair + 1], 1e-14);
  }
}

// The dropout mask keeps exactly the elements whose f32 uniform is >= p.
TEST(RandomFillTest, DropoutMaskIsUniformAtLeastProb) {
  const int64_t n = 4096;
  const auto mask = Values<float>(
      ops::DropoutMask({n}, DType::kF32, Device::Cpu(), 0.3, 8, 40));
  PhiloxGenerator generator(8, 40);
  const auto uniform = Values<float>(
      ops::RandomUniform({n}, DType::kF32, Device::Cpu(), generator, 0, 1));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(uniform[i] >= 0.3f ? static_cast<float>(1 / 0.7) : 0.0f, mask[i])
        << "at " << i;
  }
}

// --- Output dtypes
// ------------------------------------------------------------

// Near 1, u rounds up to 1 in bf16 (about 1 in 512) and f16 (1 in 4096): the
// fill must clamp to the largest value below `high` instead.
TEST(RandomFillTest, UniformStaysBelowHighInEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    PhiloxGenerator generator(3);
    const TensorBase x =
        ops::RandomUniform({100000}, dtype, Device::Cpu(), generator, 0, 1);
    ASSERT_EQ(dtype, x.dtype());
    const auto values = Values<double>(x.To(DType::kF64));
    EXPECT_GE(*std::min_element(values.begin(), values.end()), 0.0);
    EXPECT_LT(*std::max_element(values.begin(), values.end()), 1.0)
        << DTypeName(dtype);
  }
  PhiloxGenerator generator(3);
  const auto bf16 = Values<BFloat16>(ops::RandomUniform(
      {100000}, DType::kBF16, Device::Cpu(), generator, 0, 1));
  float max = 0;
  for (BFloat16 v : bf16) max = std::max(max, v.ToFloat());
  EXPECT_EQ(1.0f - 0x1p-8f, max);  // clamped, not rounded up to 1
}

// f16 and bf16 are written directly from the float computation: the same
// values as the f32 fill, clamped and rounded once.
TEST(RandomFillTest, HalfDtypesRoundTheFloatValues) {
  const int64_t n = 4099;
  PhiloxGenerator f32_generator(12), f16_generator(12), bf16_generator(12);
  const auto normal = Values<float>(ops::RandomNormal(
      {n}, DType::kF32, Device::Cpu(), f32_generator, 0.5, 3));
  const auto normal_f16 = Values<Half>(ops::RandomNormal(
      {n}, DType::kF16, Device::Cpu(), f16_generator, 0.5, 3));
  const auto normal_bf16 = Values<BFloat16>(ops::RandomNormal(
      {n}, DType::kBF16, Device::Cpu(), bf16_generator, 0.5, 3));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(FloatToHalfBits(normal[i]), normal_f16[i].bits) << i;
    ASSERT_EQ(FloatToBFloat16Bits(normal[i]), normal_bf16[i].bits) << i;
  }
  // Same blocks consumed whatever the 16/32-bit dtype.
  EXPECT_EQ(f32_generator.state(), f16_generator.state());
  EXPECT_EQ(f32_generator.state(), bf16_generator.state());
}

// One allocation (the output) per fill and per dropout: no host staging.
TEST(RandomFillTest, FillAndDropoutAllocateOnlyTheirOutput) {
  PhiloxGenerator generator(1);
  const TensorBase x = ops::RandomNormal({256, 256}, DType::kF32, Device::Cpu(),
                                         generator, 0, 1);
  ResetMemoryStats(Device::Cpu());
  const TensorBase uniform = ops::RandomUniform(
      {256, 256}, DType::kBF16, Device::Cpu(), generator, -1, 1);
  EXPECT_EQ(1, GetMemoryStats(Device::Cpu()).allocation_count);
  const TensorBase dropped = ops::Dropout(x, 0.1, 4, 0);
  EXPECT_EQ(2, GetMemoryStats(Device::Cpu()).allocation_count);
}

// --- Moments
// ------------------------------------------------------------------

struct Moments {
  double mean = 0;
  double variance = 0;
  double kurtosis = 0;  // E[(x - mean)^4] / variance^2
};

Moments MomentsOf(const std::vector<double>& values) {
  Moments m;
  for (double v : values) m.mean += v;
  m.mean /= values.size();
  double fourth = 0;
  for (double v : values) {
    const double d = (v - m.mean) * (v - m.mean);
    m.variance += d;
    fourth += d * d;
  }
  m.variance /= values.size();
  m.kurtosis = fourth / values.size() / (m.variance * m.variance);
  return m;
}

TEST(RandomFillTest, UniformMomentsInEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    PhiloxGenerator generator(21);
    const Moments m = MomentsOf(Values<double>(
        ops::RandomUniform({200000}, dtype, Device::Cpu(), generator, -2, 4)
            .To(DType::kF64)));
    // Mean 1, variance 36 / 12 = 3, kurtosis 9 / 5; bf16 rounds coarsely.
    EXPECT_NEAR(1.0, m.mean, 0.02) << DTypeName(dtype);
    EXPECT_NEAR(3.0, m.variance, 0.03) << DTypeName(dtype);
    EXPECT_NEAR(1.8, m.kurtosis, 0.02) << DTypeName(dtype);
  }
}

TEST(RandomFillTest, NormalMomentsInEveryDtype) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    PhiloxGenerator generator(22);
    const std::vector<double> values = Values<double>(
        ops::RandomNormal({200000}, dtype, Device::Cpu(), generator, 3, 2)
            .To(DType::kF64));
    const Moments m = MomentsOf(values);
    EXPECT_NEAR(3.0, m.mean, 0.02) << DTypeName(dtype);
    EXPECT_NEAR(4.0, m.variance, 0.05) << DTypeName(dtype);
    EXPECT_NEAR(3.0, m.kurtosis, 0.05) << DTypeName(dtype);
    // About 68.27% within one standard deviation.
    const double within =
        std::count_if(values.begin(), values.end(),
                      [](double v) { return std::abs(v - 3) < 2; }) /
        static_cast<double>(values.size());
    EXPECT_NEAR(0.6827, within, 0.007) << DTypeName(dtype);
  }
}

// Neighbouring elements come from different words: no pairwise correlation.
TEST(RandomFillTest, NeighboursAreUncorrelated) {
  PhiloxGenerator generator(23);
  const auto x = Values<float>(
      ops::RandomNormal({200000}, DType::kF32, Device::Cpu(), generator, 0, 1));
  for (int lag : {1, 2, 3, 4}) {
    double sum = 0;
    for (size_t i = lag; i < x.size(); ++i) sum += x[i] * x[i - lag];
    EXPECT_NEAR(0.0, sum / (x.size() - lag), 0.01) << "lag " << lag;
  }
}

// --- Reproducibility
// ----------------------------------------------------------

// Large enough that ParallelFor splits the fill over threads.
constexpr int64_t kLarge = int64_t{1} << 20;

std::vector<float> LargeDraws(int threads) {
  omp_set_num_threads(threads);
  PhiloxGenerator generator(31);
  std::vector<float> all = Values<float>(ops::RandomNormal(
      {kLarge + 3}, DType::kF32, Device::Cpu(), generator, 0, 1));
  const TensorBase uniform = ops::RandomUniform(
      {kLarge + 1}, DType::kF32, Device::Cpu(), generator, -1, 1);
  const std::vector<float> u = Values<float>(uniform);
  all.insert(all.end(), u.begin(), u.end());
  const std::vector<float> dropped =
      Values<float>(ops::Dropout(uniform, 0.2, 32, 7));
  all.insert(all.end(), dropped.begin(), dropped.end());
  return all;
}

TEST(RandomReproducibilityTest, SameValuesForOneAndTwoThreads) {
  const int saved = omp_get_max_threads();
  const std::vector<float> one = LargeDraws(1);
  const std::vector<float> two = LargeDraws(2);
  omp_set_num_threads(saved);
  EXPECT_TRUE(one == two);
}

// Two fills over consecutive counter ranges equal one fill over both when the
// first ends on a block boundary (4 elements, or 2 for f64).
TEST(RandomReproducibilityTest, SplitFillsEqualOneFill) {
  for (DType dtype : {DType::kF32, DType::kF64, DType::kBF16}) {
    for (bool normal : {false, true}) {
      auto fill = [&](int64_t n, PhiloxGenerator& generator) {
        const TensorBase x =
            normal
                ? ops::RandomNormal({n}, dtype, Device::Cpu(), generator, 0, 1)
                : ops::RandomUniform({n}, dtype, Device::Cpu(), generator, 0,
                                     1);
        return Values<double>(x.To(DType::kF64));
      };
      PhiloxGenerator once(41), twice(41);
      const std::vector<double> whole = fill(1600, once);
      std::vector<double> parts = fill(1000, twice);
      const std::vector<double> rest = fill(600, twice);
      parts.insert(parts.end(), rest.begin(), rest.end());
      EXPECT_EQ(whole, parts) << DTypeName(dtype) << " normal=" << normal;
      EXPECT_EQ(once.state(), twice.state());
    }
  }
}

// A fill ending mid-block leaves the block's other words unused: the next
// fill starts on the next block.
TEST(RandomReproducibilityTest, PartialBlockIsNotReused) {
  PhiloxGenerator generator(42);
  const auto first = Values<float>(
      ops::RandomUniform({5}, DType::kF32, Device::Cpu(), generator, 0, 1));
  EXPECT_EQ(2u, generator.offset());
  const auto second = Values<float>(
      ops::RandomUniform({4}, DType::kF32, Device::Cpu(), generator, 0, 1));
  PhiloxGenerator whole(42);
  const auto all = Values<float>(
      ops::RandomUniform({12}, DType::kF32, Device::Cpu(), whole, 0, 1));
  EXPECT_EQ(std::vector<float>(all.begin(), all.begin() + 5), first);
  EXPECT_EQ(std::vector<float>(all.begin() + 8, all.end()), second);
}

TEST(RandomReproducibilityTest, SavedStateReplaysTheStream) {
  PhiloxGenerator generator(7);
  (void)Tensor<1>::RandomNormal({10}, generator);
  const PhiloxState saved = generator.state();
  EXPECT_EQ((PhiloxState{7, 3}), saved);
  const auto expected = Tensor<2>::RandomUniform({5, 6}, generator, -1, 1);
  PhiloxGenerator restored(saved);
  EXPECT_EQ(expected.to_data<float>(),
            Tensor<2>::RandomUniform({5, 6}, restored, -1, 1).to_data<float>());
  generator.set_state(saved);
  EXPECT_EQ(
      expected.to_data<float>(),
      Tensor<2>::RandomUniform({5, 6}, generator, -1, 1).to_data<float>());
}

TEST(RandomReproducibilityTest, DifferentSeedsDiffer) {
  PhiloxGenerator a(1), b(2);
  EXPECT_NE(Tensor<1>::RandomUniform({16}, a).to_data<float>(),
            Tensor<1>::RandomUniform({16}, b).to_data<float>());
}

// --- Bad arguments -----------------------------------------------------------

TEST(RandomDeathTest, NonFloatingDtypeAborts) {
  PhiloxGenerator generator(1);
  EXPECT_DEATH((void)ops::RandomUniform({4}, DType::kI32, Device::Cpu(),
                                        generator, 0, 1),
               "random_uniform: dtype i32 is not a floating type");
}

TEST(RandomDeathTest, BadParametersAbort) {
  PhiloxGenerator generator(1);
  EXPECT_DEATH((void)ops::RandomUniform({4}, DType::kF32, Device::Cpu(),
                                        generator, 2, 1),
               "random_uniform: bad range \\[2, 1\\)");
  EXPECT_DEATH((void)ops::RandomUniform({4}, DType::kF16, Device::Cpu(),
                                        generator, 0, 1e5),
               "random_uniform: range \\[0, 100000\\) overflows f16");
  EXPECT_DEATH((void)ops::RandomNormal({4}, DType::kF32, Device::Cpu(),
                                       generator, 0, -1),
               "random_normal: bad mean 0 or std -1");
  EXPECT_DEATH((void)ops::Dropout(ops::Full({4}, 1, DType::kF32, Device::Cpu()),
                                  1.0, 0, 0),
               "dropout: prob 1 not in \\[0, 1\\)");
}

TEST(RandomDeathTest, OffsetOverflowAborts) {
  PhiloxGenerator generator(1, UINT64_MAX - 1);
  EXPECT_DEATH((void)generator.ReserveBlocks(2), "passes 2\\^64");
}

}  // namespace
}  // namespace kindling
