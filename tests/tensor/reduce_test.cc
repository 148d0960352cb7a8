// Reductions and softmax against reference loops.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

std::vector<float> Iota(int n, float start = 0, float step = 1) {
  std::vector<float> values(n);
  for (int i = 0; i < n; ++i) values[i] = start + step * i;
  return values;
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(ReduceTest, WholeTensorReductionsAreRankZero) {
  const auto t = Tensor<2>::FromData<float>({3, -1, 4, 1, -5, 9}, {2, 3});
  const auto sum = t.sum();
  EXPECT_EQ(0, sum.shape().rank());
  EXPECT_EQ(11.0f, sum.item<float>());
  EXPECT_FLOAT_EQ(11.0f / 6, t.mean().item<float>());
  EXPECT_EQ(9.0f, t.max().item<float>());
  EXPECT_EQ(-5.0f, t.min().item<float>());
}

TEST(ReduceTest, AlongEachAxisKeepsTheAxis) {
  // [2, 3, 4] with value 100 i + 10 j + k.
  std::vector<float> data;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) data.push_back(100 * i + 10 * j + k);
  const auto t = Tensor<3>::FromData(data, {2, 3, 4});
  for (int axis = 0; axis < 3; ++axis) {
    const auto sum = t.sum_dim(axis);
    Shape expected_shape{2, 3, 4};
    expected_shape[axis] = 1;
    ASSERT_EQ(expected_shape, sum.shape());
    const auto got = sum.to_data<float>();
    const auto got_max = t.max_dim(axis).to_data<float>();
    const auto got_min = t.min_dim(axis).to_data<float>();
    const auto got_mean = t.mean_dim(axis).to_data<float>();
    const auto got_arg = t.argmax(axis).to_data<int64_t>();
    int out = 0;
    for (int i = 0; i < expected_shape[0]; ++i)
      for (int j = 0; j < expected_shape[1]; ++j)
        for (int k = 0; k < expected_shape[2]; ++k, ++out) {
          float reference = 0, high = -1e9, low = 1e9;
          int64_t arg = 0;
          const int n = t.dim(axis);
          for (int r = 0; r < n; ++r) {
            int idx[3] = {i, j, k};
            idx[axis] = r;
            const float v = data[idx[0] * 12 + idx[1] * 4 + idx[2]];
            reference += v;
            if (v > high) {
              high = v;
              arg = r;
            }
            low = std::min(low, v);
          }
          EXPECT_EQ(reference, got[out]) << axis;
          EXPECT_FLOAT_EQ(reference / n, got_mean[out]) << axis;
          EXPECT_EQ(high, got_max[out]) << axis;
          EXPECT_EQ(low, got_min[out]) << axis;
          EXPECT_EQ(arg, got_arg[out]) << axis;
        }
  }
}

TEST(ReduceTest, NegativeAxisCountsFromTheBack) {
  const auto t = Tensor<2>::FromData(Iota(6), {2, 3});
  EXPECT_EQ(t.sum_dim(1).to_data<float>(), t.sum_dim(-1).to_data<float>());
}

TEST(ReduceTest, NonContiguousInput) {
  const auto t = Tensor<2>::FromData(Iota(6), {2, 3}).t();  // [3, 2]
  EXPECT_EQ((std::vector<float>{3, 5, 7}), t.sum_dim(1).to_data<float>());
  EXPECT_EQ((std::vector<float>{3, 12}), t.sum_dim(0).to_data<float>());
}

TEST(ReduceTest, ArgmaxTiesPickTheFirstIndex) {
  const auto t = Tensor<2>::FromData<float>({1, 5, 5, 0, 2, 2, 2, 2}, {2, 4});
  EXPECT_EQ((std::vector<int64_t>{1, 0}), t.argmax(1).to_data<int64_t>());
  EXPECT_EQ((std::vector<int64_t>{3, 0}), t.argmin(1).to_data<int64_t>());
  const auto column = t.t();  // ties along a strided axis
  EXPECT_EQ((std::vector<int64_t>{1, 0}), column.argmax(0).to_data<int64_t>());
}

TEST(ReduceTest, NanPropagatesThroughMaxAndArgmax) {
  const auto t = Tensor<1>::FromData<float>({1, kNan, 3}, {3});
  EXPECT_TRUE(std::isnan(t.max().item<float>()));
  EXPECT_TRUE(std::isnan(t.min().item<float>()));
  EXPECT_EQ(1, t.argmax(0).item<int64_t>());
}

TEST(ReduceTest, LargeSumIsAccurateAndParallel) {
  const int n = 1 << 22;
  const auto t = Tensor<1>::Full({n}, 0.1);
  // Summing 4M copies of 0.1f in float would drift by percents.
  EXPECT_NEAR(n * static_cast<double>(0.1f), t.sum().item<float>(), 1.0);
  const auto ramp = Tensor<1>::Arange(0, n);
  EXPECT_DOUBLE_EQ(
      static_cast<double>(n) * (n - 1) / 2,
      static_cast<double>(ramp.to(DType::kF64).sum().item<double>()));
  EXPECT_EQ(n - 1, ramp.max().item<float>());
  EXPECT_EQ(n - 1, ramp.argmax(0).item<int64_t>());
}

TEST(ReduceTest, LargeOddLengthSumCountsEveryElementOnce) {
  const int64_t n = 3 * (int64_t{1} << 20) + 7;  // splits unevenly
  EXPECT_EQ(static_cast<float>(n), Tensor<1>::Ones({n}).sum().item<float>());
  EXPECT_EQ(n, (Tensor<1, Int>::Ones({n}).sum().item<int64_t>()));
  EXPECT_FLOAT_EQ(1.0f, Tensor<1>::Ones({n}).mean().item<float>());
}

TEST(ReduceTest, IntegerReductions) {
  const auto t = Tensor<2, Int>::FromData<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(21, t.sum().item<int64_t>());
  EXPECT_EQ((std::vector<int64_t>{5, 7, 9}), t.sum_dim(0).to_data<int64_t>());
  EXPECT_EQ(6, t.max().item<int64_t>());
}

TEST(ReduceTest, HalfPrecisionReducesInFloat) {
  const auto t = Tensor<1>::Full({1000}, 1.0, Device::Cpu(), DType::kF16);
  const auto sum = t.sum();
  EXPECT_EQ(DType::kF16, sum.dtype());
  EXPECT_EQ(1000.0f, sum.item<float>());
}

std::vector<float> ReferenceSoftmax(const std::vector<float>& row, bool log) {
  double high = -INFINITY;
  for (float v : row) high = std::max<double>(high, v);
  double sum = 0;
  for (float v : row) sum += std::exp(v - high);
  std::vector<float> out;
  for (float v : row) {
    out.push_back(log ? static_cast<float>(v - high - std::log(sum))
                      : static_cast<float>(std::exp(v - high) / sum));
  }
  return out;
}

TEST(SoftmaxTest, MatchesReferenceAndSumsToOne) {
  const std::vector<float> row{0.5, -1, 2, 0};
  const auto t =
      Tensor<2>::FromData<float>({0.5, -1, 2, 0, 0.5, -1, 2, 0}, {2, 4});
  const auto s = t.softmax(1).to_data<float>();
  const auto reference = ReferenceSoftmax(row, false);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(reference[i % 4], s[i], 1e-6);
  const auto l = t.log_softmax(-1).to_data<float>();
  const auto log_reference = ReferenceSoftmax(row, true);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(log_reference[i % 4], l[i], 1e-6);
}

TEST(SoftmaxTest, StableOnLargeAndNegativeInputs) {
  const auto large = Tensor<1>::FromData<float>({1000, 1001, 1002}, {3});
  const auto s = large.softmax(0).to_data<float>();
  const auto reference = ReferenceSoftmax({0, 1, 2}, false);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(reference[i], s[i], 1e-6);
  const auto negative = Tensor<1>::FromData<float>({-1000, -1001, -1e30f}, {3});
  const auto n = negative.softmax(0).to_data<float>();
  EXPECT_NEAR(1 / (1 + std::exp(-1.0)), n[0], 1e-6);
  EXPECT_EQ(0.0f, n[2]);
  const auto l = negative.log_softmax(0).to_data<float>();
  EXPECT_TRUE(std::isfinite(l[0]));
  EXPECT_NEAR(-std::log1p(std::exp(-1.0)), l[0], 1e-5);
}

TEST(SoftmaxTest, AlongANonLastAxis) {
  const auto t = Tensor<2>::FromData<float>({0, 1, 2, 3, 4, 5}, {3, 2});
  const auto s = t.softmax(0).to_data<float>();
  const auto reference = ReferenceSoftmax({0, 2, 4}, false);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(reference[i], s[2 * i], 1e-6);
    EXPECT_NEAR(reference[i], s[2 * i + 1], 1e-6);
  }
}

TEST(SoftmaxTest, MaskedRowsWithNegativeInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto t = Tensor<1>::FromData<float>({0, -inf, 0}, {3});
  EXPECT_EQ((std::vector<float>{0.5, 0, 0.5}), t.softmax(0).to_data<float>());
}

}  // namespace
}  // namespace kindling
