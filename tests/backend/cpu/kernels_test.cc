// The AVX2 paths of the CPU kernels against scalar reference loops, at the
// sizes where their structure changes: vector tails (n not a multiple of 8),
// column blocks (inner around 16 and 32), long single rows split across
// threads, and outputs large enough to be written with streaming stores.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/tensor/elementwise_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(n);
  for (float& value : values) value = normal(engine);
  return values;
}

// Reference of a reduction of [outer, n, inner] along n.
struct Reference {
  std::vector<double> sum;
  std::vector<float> max;
  std::vector<float> min;
  std::vector<int64_t> argmax;
  std::vector<int64_t> argmin;
};

Reference Reduce(const std::vector<float>& x, int64_t outer, int64_t n,
                 int64_t inner) {
  Reference r;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      float max = x[o * n * inner + i];
      float min = max;
      int64_t argmax = 0;
      int64_t argmin = 0;
      bool nan = false;
      for (int64_t k = 0; k < n; ++k) {
        const float v = x[(o * n + k) * inner + i];
        sum += v;
        if (std::isnan(v)) {
          if (!nan) argmax = argmin = k;
          nan = true;
          continue;
        }
        if (nan) continue;
        if (v > max) max = v, argmax = k;
        if (v < min) min = v, argmin = k;
      }
      r.sum.push_back(sum);
      r.max.push_back(nan ? kNan : max);
      r.min.push_back(nan ? kNan : min);
      r.argmax.push_back(argmax);
      r.argmin.push_back(argmin);
    }
  }
  return r;
}

void ExpectSameFloats(const std::vector<float>& expected,
                      const std::vector<float>& actual, const char* what) {
  ASSERT_EQ(expected.size(), actual.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " at " << i;
    } else {
      EXPECT_EQ(expected[i], actual[i]) << what << " at " << i;
    }
  }
}

// Checks every reduction of a [outer, n, inner] tensor along axis 1.
void CheckReductions(const std::vector<float>& values, int64_t outer, int64_t n,
                     int64_t inner) {
  SCOPED_TRACE(testing::Message()
               << "[" << outer << ", " << n << ", " << inner << "]");
  const auto t = Tensor<3>::FromData(values, {outer, n, inner});
  const Reference r = Reduce(values, outer, n, inner);
  const auto sum = t.sum_dim(1).to_data<float>();
  const auto mean = t.mean_dim(1).to_data<float>();
  for (size_t i = 0; i < r.sum.size(); ++i) {
    if (std::isnan(r.sum[i])) continue;
    EXPECT_NEAR(r.sum[i], sum[i], 1e-5 * (1 + std::fabs(r.sum[i]))) << i;
    EXPECT_NEAR(r.sum[i] / n, mean[i], 1e-5 * (1 + std::fabs(r.sum[i] / n)))
        << i;
  }
  ExpectSameFloats(r.max, t.max_dim(1).to_data<float>(), "max");
  ExpectSameFloats(r.min, t.min_dim(1).to_data<float>(), "min");
  EXPECT_EQ(r.argmax, t.argmax(1).to_data<int64_t>());
  EXPECT_EQ(r.argmin, t.argmin(1).to_data<int64_t>());
}

TEST(CpuReduceKernelTest, RowsOfEveryTailLength) {
  for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 127, 128, 129, 1000}) {
    CheckReductions(RandomValues(3 * n, n), 3, n, 1);
  }
}

TEST(CpuReduceKernelTest, ColumnsAroundTheBlockWidth) {
  for (int64_t inner : {2, 5, 8, 15, 16, 17, 31, 32, 33, 64, 70}) {
    for (int64_t n : {1, 3, 65, 130}) {
      CheckReductions(RandomValues(2 * n * inner, n * inner), 2, n, inner);
    }
  }
}

TEST(CpuReduceKernelTest, TiesPickTheFirstIndexInEveryLane) {
  // Rows and columns of repeated values: every lane sees ties.
  std::vector<float> values(4 * 40 * 37);
  for (size_t i = 0; i < values.size(); ++i) values[i] = (i * 7 % 5) - 2.0f;
  CheckReductions(values, 4, 40, 37);
  CheckReductions(values, 4, 40 * 37, 1);
}

TEST(CpuReduceKernelTest, NanAnywhereWins) {
  for (int64_t position : {0, 5, 8, 35, 99}) {
    std::vector<float> values = RandomValues(100 * 33, position);
    values[position * 33 + 31] = kNan;  // column 31 of row `position`
    CheckReductions(values, 1, 100, 33);
    std::vector<float> row = RandomValues(100, position);
    row[position] = kNan;
    row[99 - position / 2] = kNan;  // the first NaN must win argmax
    CheckReductions(row, 1, 100, 1);
  }
}

TEST(CpuReduceKernelTest, LongRowSplitAcrossThreads) {
  const int64_t n = (int64_t{1} << 20) + 13;
  std::vector<float> values = RandomValues(n, 7);
  values[n - 3] = 100.0f;  // max and argmax in the last chunk
  values[n / 3] = -100.0f;
  values[n / 2] = -100.0f;  // a tie in a later chunk loses
  const auto t = Tensor<1>::FromData(values, {n});
  EXPECT_EQ(100.0f, t.max().item<float>());
  EXPECT_EQ(-100.0f, t.min().item<float>());
  EXPECT_EQ(n - 3, t.argmax(0).item<int64_t>());
  EXPECT_EQ(n / 3, t.argmin(0).item<int64_t>());
  values[n / 2 + 1] = kNan;
  values[n - 1] = kNan;
  const auto with_nan = Tensor<1>::FromData(values, {n});
  EXPECT_TRUE(std::isnan(with_nan.max().item<float>()));
  EXPECT_EQ(n / 2 + 1, with_nan.argmax(0).item<int64_t>());
}

std::vector<float> ReferenceSoftmax(const std::vector<float>& x, int64_t outer,
                                    int64_t n, int64_t inner, bool log) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * n + k) * inner + i; };
      double max = -INFINITY;
      for (int64_t k = 0; k < n; ++k) max = std::max<double>(max, x[at(k)]);
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += std::exp(x[at(k)] - max);
      for (int64_t k = 0; k < n; ++k) {
        y[at(k)] = log ? static_cast<float>(x[at(k)] - max - std::log(sum))
                       : static_cast<float>(std::exp(x[at(k)] - max) / sum);
      }
    }
  }
  return y;
}

void CheckSoftmax(int64_t outer, int64_t n, int64_t inner) {
  SCOPED_TRACE(testing::Message()
               << "[" << outer << ", " << n << ", " << inner << "]");
  const std::vector<float> x = RandomValues(outer * n * inner, n + inner);
  const auto t = Tensor<3>::FromData(x, {outer, n, inner});
  for (bool log : {false, true}) {
    const auto expected = ReferenceSoftmax(x, outer, n, inner, log);
    const auto actual =
        (log ? t.log_softmax(1) : t.softmax(1)).to_data<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(expected[i], actual[i], 2e-6 * (1 + std::fabs(expected[i])))
          << (log ? "log_softmax" : "softmax") << " at " << i;
    }
  }
}

TEST(CpuSoftmaxKernelTest, RowsAndColumnsOfOddSizes) {
  for (int64_t n : {1, 7, 9, 33, 100}) {
    CheckSoftmax(5, n, 1);
    for (int64_t inner : {3, 16, 17, 40}) CheckSoftmax(2, n, inner);
  }
}

TEST(CpuSoftmaxKernelTest, LargeOutputsStream) {
  // 4 MiB and more: rows go through the stack buffer (n <= 4096) or in
  // place (longer), odd lengths leave rows unaligned.
  CheckSoftmax(1025, 1023, 1);
  CheckSoftmax(200, 5000, 1);
}

// EightLaneSoftmaxRow() is the row kernel's arithmetic on eight lanes (Exp8,
// sums widened in its order, one float scale): what SoftmaxRowF32 gives
// without AVX-512.
std::vector<float> EightLaneSoftmaxRow(const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  const float max = *std::max_element(x.begin(), x.end());
  std::vector<float> exps(n);
  __m256d sum = _mm256_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    const int64_t lanes = std::min<int64_t>(8, n - i);
    const __m256 e = cpu::Exp8(_mm256_sub_ps(
        cpu::LoadPartial(x.data() + i, lanes, -INFINITY), _mm256_set1_ps(max)));
    sum = cpu::AddWidened(sum, e);
    cpu::StorePartial(exps.data() + i, lanes, e);
  }
  const float scale = static_cast<float>(1.0 / cpu::Sum4d(sum));
  for (float& e : exps) e *= scale;
  return exps;
}

// On a CPU with AVX-512 the row kernel takes its exponentials sixteen at a
// time; its result must be the eight-lane result, bit for bit, whatever the
// tail.
TEST(CpuSoftmaxKernelTest, RowsGiveTheEightLaneBitsOnEveryPath) {
  for (int64_t n : {8, 16, 23, 32, 47, 1024, 1031}) {
    const std::vector<float> x = RandomValues(n, 7 + n);
    const std::vector<float> expected = EightLaneSoftmaxRow(x);
    const std::vector<float> actual =
        Tensor<2>::FromData(x, {1, n}).softmax(1).to_data<float>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(expected[i]),
                std::bit_cast<uint32_t>(actual[i]))
          << "n = " << n << ", element " << i;
    }
  }
}

// EightLaneSoftmaxColumns() is the column kernel's arithmetic on eight lanes
// (Exp8 per element, each column's sum in double down the rows, one float
// scale) for x of shape [n, inner] along axis 0.
std::vector<float> EightLaneSoftmaxColumns(const std::vector<float>& x,
                                           int64_t n, int64_t inner) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < inner; ++i) {
    float max = x[i];
    for (int64_t r = 1; r < n; ++r) max = std::max(max, x[r * inner + i]);
    double sum = 0;
    for (int64_t r = 0; r < n; ++r) {
      const __m256 e = cpu::Exp8(_mm256_set1_ps(x[r * inner + i] - max));
      y[r * inner + i] = _mm256_cvtss_f32(e);
      sum += y[r * inner + i];
    }
    const float scale = static_cast<float>(1.0 / sum);
    for (int64_t r = 0; r < n; ++r) y[r * inner + i] *= scale;
  }
  return y;
}

// With AVX-512, full blocks of 16 columns take their exponentials sixteen
// at a time; every block must give the eight-lane bits.
TEST(CpuSoftmaxKernelTest, ColumnsGiveTheEightLaneBitsOnEveryPath) {
  for (int64_t inner : {16, 17, 32, 40}) {
    for (int64_t n : {1, 9, 300}) {
      const std::vector<float> x = RandomValues(n * inner, n + 3 * inner);
      const std::vector<float> expected = EightLaneSoftmaxColumns(x, n, inner);
      const std::vector<float> actual =
          Tensor<2>::FromData(x, {n, inner}).softmax(0).to_data<float>();
      for (int64_t i = 0; i < n * inner; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(expected[i]),
                  std::bit_cast<uint32_t>(actual[i]))
            << "[" << n << ", " << inner << "], element " << i;
      }
    }
  }
}

// Long columns of wide rows stream spans of columns with an online max
// (softmax.cc, StreamsColumns): partial spans and chunks, several slabs, and
// maxima that grow down the rows by far more than float's exponent range,
// so the running sums are rescaled to 0 and from -inf.
TEST(CpuSoftmaxKernelTest, StreamedSpansMatchTheReference) {
  CheckSoftmax(1, 64, 1024);
  CheckSoftmax(2, 100, 1029);
  std::vector<float> x = RandomValues(150 * 1030, 11);
  for (int64_t r = 0; r < 150; ++r) {
    for (int64_t i = 0; i < 1030; ++i) {
      float& v = x[r * 1030 + i];
      if (i % 3 == 0) v += 2.0f * static_cast<float>(r);  // max grows
      if (i == 5)
        v = r < 40 ? -INFINITY : v - 100.0f;  // -inf, then far below 0
      if (i == 6) v = -INFINITY;              // all -inf
    }
  }
  const auto t = Tensor<2>::FromData(x, {150, 1030});
  for (bool log : {false, true}) {
    const auto expected = ReferenceSoftmax(x, 1, 150, 1030, log);
    const auto actual =
        (log ? t.log_softmax(0) : t.softmax(0)).to_data<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      if (i % 1030 == 6) {
        ASSERT_TRUE(std::isnan(actual[i])) << i;  // 0 / 0, as in PyTorch
        continue;
      }
      if (std::isinf(expected[i])) {  // log_softmax of -inf
        ASSERT_EQ(expected[i], actual[i]) << i;
        continue;
      }
      ASSERT_NEAR(expected[i], actual[i], 2e-6 * (1 + std::fabs(expected[i])))
          << (log ? "log_softmax" : "softmax") << " at " << i;
    }
  }
  // A NaN makes its column NaN and leaves the others alone.
  x[77 * 1030 + 9] = kNan;
  const auto with_nan =
      Tensor<2>::FromData(x, {150, 1030}).softmax(0).to_data<float>();
  EXPECT_TRUE(std::isnan(with_nan[9]));
  EXPECT_TRUE(std::isnan(with_nan[149 * 1030 + 9]));
  EXPECT_FALSE(std::isnan(with_nan[10]));
}

TEST(CpuSoftmaxKernelTest, NegativeInfinityColumnsAndNan) {
  const float inf = std::numeric_limits<float>::infinity();
  // [3, 2] along axis 0: column 0 is masked but one entry.
  const auto t =
      Tensor<2>::FromData<float>({-inf, kNan, 0, 1, -inf, 1}, {3, 2});
  const auto s = t.softmax(0).to_data<float>();
  EXPECT_EQ(0.0f, s[0]);
  EXPECT_EQ(1.0f, s[2]);
  EXPECT_EQ(0.0f, s[4]);
  for (int i : {1, 3, 5}) EXPECT_TRUE(std::isnan(s[i])) << i;
}

// Unary float ops against the double functions, on a large tensor (streaming
// stores, several threads) and on a transposed view (strided segments).
TEST(CpuUnaryKernelTest, LargeAndStridedMatchTheReference) {
  const int64_t rows = 1031;
  const int64_t cols = 1029;
  std::vector<float> x = RandomValues(rows * cols, 3);
  std::vector<float> positive(x.size());
  for (size_t i = 0; i < x.size(); ++i) positive[i] = std::fabs(x[i]) + 1e-3f;
  struct Case {
    const char* name;
    Tensor<2> (*op)(const Tensor<2>&);
    double (*reference)(double);
    bool positive_input;
  };
  const Case cases[] = {
      {"exp", [](const Tensor<2>& t) { return t.exp(); },
       [](double v) { return std::exp(v); }, false},
      {"log", [](const Tensor<2>& t) { return t.log(); },
       [](double v) { return std::log(v); }, true},
      {"sqrt", [](const Tensor<2>& t) { return t.sqrt(); },
       [](double v) { return std::sqrt(v); }, true},
      {"tanh", [](const Tensor<2>& t) { return t.tanh(); },
       [](double v) { return std::tanh(v); }, false},
      {"sigmoid", [](const Tensor<2>& t) { return t.sigmoid(); },
       [](double v) { return 1 / (1 + std::exp(-v)); }, false},
      {"gelu", [](const Tensor<2>& t) { return t.gelu(); },
       [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); },
       false},
  };
  for (const Case& c : cases) {
    const std::vector<float>& input = c.positive_input ? positive : x;
    const auto t = Tensor<2>::FromData(input, {rows, cols});
    const auto dense = c.op(t).to_data<float>();
    const auto strided = c.op(t.t()).to_data<float>();  // [cols, rows]
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        const double expected = c.reference(input[r * cols + k]);
        const double tolerance = 1e-6 * std::fabs(expected) + 1e-30;
        ASSERT_NEAR(expected, dense[r * cols + k], tolerance)
            << c.name << " of " << input[r * cols + k];
        ASSERT_NEAR(expected, strided[k * rows + r], tolerance)
            << c.name << " (strided) of " << input[r * cols + k];
      }
    }
  }
}

// GELU runs 16 lanes at a time where the CPU has AVX-512: a misaligned start
// (masked head before the streaming stores), lengths that are not a
// multiple of 16 (masked tail), and short rows must all match the reference.
TEST(CpuUnaryKernelTest, GeluHeadsAndTailsMatchTheReference) {
  const int64_t n = (int64_t{1} << 20) + 37;  // large enough to stream
  const std::vector<float> x = RandomValues(n, 5);
  const auto t = Tensor<1>::FromData(x, {n});
  auto reference = [](double v) {
    return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
  };
  for (int64_t start : {0, 1, 3, 15}) {
    for (int64_t length : {int64_t{1}, int64_t{15}, int64_t{17}, n - 16}) {
      const auto y = t.narrow(0, start, length).gelu().to_data<float>();
      ASSERT_EQ(static_cast<size_t>(length), y.size());
      for (int64_t i = 0; i < length; ++i) {
        const double expected = reference(x[start + i]);
        ASSERT_NEAR(expected, y[i], 1e-6 * std::fabs(expected) + 1e-30)
            << "start " << start << " length " << length << " i " << i;
      }
    }
  }
}

// GELU's backward (grad * GELU'(x), one pass) on every layout its f32
// kernel distinguishes: contiguous with heads and tails around the vector
// width, a transposed gradient, a broadcast input, a scalar on either side,
// and in place. Each matches the formula; strided layouts give the
// contiguous bits.
TEST(CpuBinaryKernelTest, GeluBackwardMatchesTheFormulaOnEveryLayout) {
  // GELU'(v) = Phi(v) + v phi(v), as its two terms.
  auto terms = [](double v) {
    return std::pair<double, double>{
        0.5 * std::erfc(-v / std::sqrt(2.0)),
        v * std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi)};
  };
  auto expect_formula =
      [&](const std::vector<float>& grad, const std::vector<float>& x,
          const std::vector<float>& got, const std::string& what) {
        ASSERT_EQ(grad.size(), got.size()) << what;
        for (size_t i = 0; i < got.size(); ++i) {
          const auto [cdf, product] = terms(x[i]);
          // Within a few float ulps of the terms' size (they cancel near
          // -0.75).
          const double size = std::fabs(grad[i]) * (cdf + std::fabs(product));
          ASSERT_NEAR(grad[i] * (cdf + product), got[i], 1e-6 * size + 1e-30)
              << what << " i " << i;
        }
      };
  const int64_t n = 1000;
  const std::vector<float> grad = RandomValues(n, 6);
  const std::vector<float> x = RandomValues(n, 7);
  const auto g = Tensor<1>::FromData(grad, {n});
  const auto t = Tensor<1>::FromData(x, {n});
  const auto backward = [](const Tensor<1>& a, const Tensor<1>& b) {
    return Tensor<1>(ops::Binary(BinaryOp::kGeluBackward, a.base(), b.base()));
  };
  for (int64_t start : {0, 1, 7}) {
    for (int64_t length : {1, 7, 8, 9, 15, 16, 17, 33, 900}) {
      const std::vector<float> got =
          backward(g.narrow(0, start, length), t.narrow(0, start, length))
              .to_data<float>();
      expect_formula(
          std::vector<float>(grad.begin() + start,
                             grad.begin() + start + length),
          std::vector<float>(x.begin() + start, x.begin() + start + length),
          got,
          "start " + std::to_string(start) + " length " +
              std::to_string(length));
    }
  }
  const std::vector<float> contiguous = backward(g, t).to_data<float>();
  // A [40, 25] gradient read transposed, and the same values laid out so.
  const auto g2 = Tensor<2>::FromData(grad, {40, 25});
  const auto t2 = Tensor<2>::FromData(x, {40, 25});
  const Tensor<2> strided(ops::Binary(BinaryOp::kGeluBackward,
                                      g2.transpose(0, 1).base(),
                                      t2.transpose(0, 1).base()));
  EXPECT_EQ(backward(g, t).to_data<float>(),
            strided.transpose(0, 1).contiguous().to_data<float>());
  // One input value broadcast down a column, and a scalar on either side.
  const Tensor<2> column(ops::Binary(BinaryOp::kGeluBackward, g2.base(),
                                     t2.narrow(1, 0, 1).base()));
  const std::vector<float> column_values = column.to_data<float>();
  std::vector<float> broadcast_x(n);
  for (int64_t i = 0; i < n; ++i) broadcast_x[i] = x[(i / 25) * 25];
  expect_formula(grad, broadcast_x, column_values, "broadcast");
  const TensorBase scalar_rhs =
      ops::BinaryScalar(BinaryOp::kGeluBackward, g.base(), -0.4);
  const TensorBase scalar_lhs =
      ops::ScalarBinary(BinaryOp::kGeluBackward, 1.5, t.base());
  expect_formula(grad, std::vector<float>(n, -0.4f),
                 Tensor<1>(scalar_rhs).to_data<float>(), "scalar rhs");
  expect_formula(std::vector<float>(n, 1.5f), x,
                 Tensor<1>(scalar_lhs).to_data<float>(), "scalar lhs");
  // In place: the gradient overwritten with the result.
  TensorBase target = g.base().Contiguous().Clone();
  ops::BinaryInPlace(BinaryOp::kGeluBackward, target, t.base());
  EXPECT_EQ(contiguous, Tensor<1>(target).to_data<float>());
}

// Backend::GeluWithSlope (autodiff's GELU forward) writes Unary(kGelu)'s
// bits and the slope Binary(kGeluBackward) multiplies by, for every head and
// tail around the vector widths, and for lanes past |x| = 13, infinities
// and NaN, which the sixteen-lane path hands to the eight-lane one. It
// refuses, allocating nothing, what it has no kernel for.
TEST(CpuGeluWithSlopeTest, HasGeluAndGeluBackwardsBits) {
  std::vector<float> x = RandomValues(4099, 8);
  const float specials[] = {0.0f,
                            -0.0f,
                            -0.75f,
                            12.9f,
                            13.5f,
                            -13.5f,
                            20.0f,
                            -25.0f,
                            1e-30f,
                            1e30f,
                            -1e30f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < std::size(specials); ++i) x[37 * i + 5] = specials[i];
  const int64_t n = static_cast<int64_t>(x.size());
  const auto t = Tensor<1>::FromData(x, {n});
  const auto grad = Tensor<1>::FromData(RandomValues(n, 9), {n});
  const auto bits = [](const TensorBase& tensor) {
    std::vector<uint32_t> result;
    for (float v : Tensor<1>(tensor).to_data<float>()) {
      result.push_back(std::bit_cast<uint32_t>(v));
    }
    return result;
  };
  Backend& cpu = GetBackend(Device::Cpu());
  for (int64_t start : {0, 1, 3}) {
    for (int64_t length : {1, 7, 8, 9, 15, 16, 17, 33, 4096}) {
      const TensorBase in = t.narrow(0, start, length).base();
      const TensorBase g = grad.narrow(0, start, length).base();
      TensorBase out, slope;
      ASSERT_TRUE(cpu.GeluWithSlope(in, &out, &slope));
      ASSERT_EQ(in.shape(), out.shape());
      ASSERT_EQ(in.shape(), slope.shape());
      const std::string where = "start " + std::to_string(start) + " length " +
                                std::to_string(length);
      EXPECT_EQ(bits(ops::Unary(UnaryOp::kGelu, in)), bits(out)) << where;
      EXPECT_EQ(bits(ops::Binary(BinaryOp::kGeluBackward, g, in)),
                bits(ops::Binary(BinaryOp::kMul, g, slope)))
          << where;
    }
  }
  // A transposed input and an f64 one: refused, nothing allocated.
  const auto matrix = Tensor<2>::FromData(
      std::vector<float>(x.begin(), x.begin() + 40), {5, 8});
  const TensorBase transposed = matrix.transpose(0, 1).base();
  const TensorBase f64 = transposed.Contiguous().To(DType::kF64);
  for (const TensorBase& refused : {transposed, f64}) {
    TensorBase out, slope;
    EXPECT_FALSE(cpu.GeluWithSlope(refused, &out, &slope));
    EXPECT_FALSE(out.defined());
    EXPECT_FALSE(slope.defined());
  }
}

}  // namespace
}  // namespace kindling
