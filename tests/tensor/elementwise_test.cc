// Element-wise ops against reference loops: broadcasting edge cases, scalar
// forms, rank 0, non-contiguous inputs, parallel-sized inputs.
#include <cmath>
#include <cstdint>
#include <functional>
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

void ExpectNear(const std::vector<float>& expected,
                const std::vector<float>& actual, float tolerance = 1e-6f) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << i;
      continue;
    }
    EXPECT_NEAR(expected[i], actual[i],
                tolerance * std::max(1.0f, std::fabs(expected[i])))
        << "at " << i;
  }
}

TEST(BinaryTest, SameShapeAddSubMulDiv) {
  const auto a = Tensor<2>::FromData(Iota(6, 1), {2, 3});
  const auto b = Tensor<2>::FromData(Iota(6, 2, 0.5f), {2, 3});
  const auto x = Iota(6, 1), y = Iota(6, 2, 0.5f);
  std::vector<float> sum(6), diff(6), prod(6), quot(6);
  for (int i = 0; i < 6; ++i) {
    sum[i] = x[i] + y[i];
    diff[i] = x[i] - y[i];
    prod[i] = x[i] * y[i];
    quot[i] = x[i] / y[i];
  }
  ExpectNear(sum, (a + b).to_data<float>());
  ExpectNear(diff, (a - b).to_data<float>());
  ExpectNear(prod, (a * b).to_data<float>());
  ExpectNear(quot, (a / b).to_data<float>());
}

TEST(BinaryTest, BroadcastRowAndColumn) {
  const auto matrix = Tensor<2>::FromData(Iota(6), {2, 3});
  const auto row = Tensor<1>::FromData<float>({10, 20, 30}, {3});
  const auto column = Tensor<2>::FromData<float>({100, 200}, {2, 1});
  EXPECT_EQ((std::vector<float>{10, 21, 32, 13, 24, 35}),
            (matrix + row).to_data<float>());
  EXPECT_EQ((std::vector<float>{100, 101, 102, 203, 204, 205}),
            (matrix + column).to_data<float>());
  // Outer-product style: [2, 1] x [3] -> [2, 3].
  const auto outer = column * row;
  EXPECT_EQ((Shape{2, 3}), outer.shape());
  EXPECT_EQ((std::vector<float>{1000, 2000, 3000, 2000, 4000, 6000}),
            outer.to_data<float>());
}

TEST(BinaryTest, RankZeroOperandsBroadcast) {
  const auto scalar = Tensor<0>::Full({}, 2.0);
  const auto v = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  const auto r = v * scalar;
  EXPECT_EQ((Shape{3}), r.shape());
  EXPECT_EQ((std::vector<float>{2, 4, 6}), r.to_data<float>());
  const auto s = scalar + scalar;
  EXPECT_EQ(0, s.shape().rank());
  EXPECT_EQ(4.0f, s.item<float>());
}

TEST(BinaryTest, SizeOneDimsOnBothSides) {
  const auto a = Tensor<3>::FromData(Iota(4), {4, 1, 1});
  const auto b = Tensor<3>::FromData(Iota(6), {1, 2, 3});
  const auto c = a - b;
  ASSERT_EQ((Shape{4, 2, 3}), c.shape());
  const auto data = c.to_data<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(i - j, data[i * 6 + j]);
}

TEST(BinaryTest, ScalarFormsOnBothSides) {
  const auto v = Tensor<1>::FromData<float>({1, 2, 4}, {3});
  EXPECT_EQ((std::vector<float>{3, 4, 6}), (v + 2.0).to_data<float>());
  EXPECT_EQ((std::vector<float>{1, 0, -2}), (2.0 - v).to_data<float>());
  EXPECT_EQ((std::vector<float>{4, 2, 1}), (4.0 / v).to_data<float>());
  EXPECT_EQ((std::vector<float>{0.5, 1, 2}), (v / 2.0).to_data<float>());
  EXPECT_EQ((std::vector<float>{-1, -2, -4}), (-v).to_data<float>());
}

TEST(BinaryTest, NonContiguousInputs) {
  const auto base = Tensor<2>::FromData(Iota(12), {3, 4});
  const auto transposed = base.t();            // [4, 3]
  const auto sliced = base.slice(1, 0, 4, 2);  // [3, 2]
  const auto other = Tensor<2>::Ones({4, 3});
  const auto sum = transposed + other;
  const auto data = sum.to_data<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(j * 4 + i + 1, data[i * 3 + j]);
  // sliced = [[0, 2], [4, 6], [8, 10]]; times its first column.
  EXPECT_EQ((std::vector<float>{0, 0, 16, 24, 64, 80}),
            (sliced * sliced.narrow(1, 0, 1)).to_data<float>());
}

TEST(BinaryTest, LargeInputsTakeTheParallelPath) {
  const int n = 1 << 20;
  const auto a = Tensor<1>::Arange(0, n);
  const auto b = Tensor<1>::Full({n}, 0.5);
  const auto data = (a * b + 1.0).to_data<float>();
  for (int i = 0; i < n; i += 4099) EXPECT_EQ(i * 0.5f + 1, data[i]);
  EXPECT_EQ((n - 1) * 0.5f + 1, data[n - 1]);
  // A large transposed (strided) operand.
  const auto m = Tensor<1>::Arange(0, 1024 * 512).reshape<2>({1024, 512});
  const auto t = m.t() + 0.0;  // [512, 1024]
  const auto td = t.to_data<float>();
  EXPECT_EQ(1.0f * (3 * 512 + 7), td[7 * 1024 + 3]);
}

TEST(BinaryTest, PowMaximumMinimum) {
  const auto a = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  const auto b = Tensor<1>::FromData<float>({2, 0.5, -1}, {3});
  ExpectNear({1, std::sqrt(2.0f), 1.0f / 3}, pow(a, b).to_data<float>());
  ExpectNear({1, 4, 9}, a.pow(2).to_data<float>());
  EXPECT_EQ((std::vector<float>{2, 2, 3}), maximum(a, b).to_data<float>());
  EXPECT_EQ((std::vector<float>{1, 0.5, -1}), minimum(a, b).to_data<float>());
}

TEST(BinaryTest, IntegerArithmeticIsDefinedEverywhere) {
  const auto a = Tensor<1, Int>::FromData<int64_t>(
      {7, -7, 5, std::numeric_limits<int64_t>::max()}, {4});
  const auto b = Tensor<1, Int>::FromData<int64_t>({2, 2, 0, 1}, {4});
  EXPECT_EQ(
      (std::vector<int64_t>{3, -3, 0, std::numeric_limits<int64_t>::max()}),
      (a / b).to_data<int64_t>());
  EXPECT_EQ(std::numeric_limits<int64_t>::min(),
            (a + b).to_data<int64_t>()[3]);  // wraps
  // max^2 = 2^126 - 2^64 + 1 wraps to 1.
  EXPECT_EQ((std::vector<int64_t>{49, 49, 25, 1}),
            (pow(a, Tensor<1, Int>::Full({4}, 2)).to_data<int64_t>()));
}

TEST(UnaryTest, MatchesReferenceFunctions) {
  const std::vector<float> x{-3, -1.5, -0.25, 0, 0.5, 1, 2.5, 4};
  const auto t = Tensor<1>::FromData(x, {8});
  auto reference = [&](const std::function<float(float)>& f) {
    std::vector<float> out;
    for (float v : x) out.push_back(f(v));
    return out;
  };
  ExpectNear(reference([](float v) { return std::fabs(v); }),
             t.abs().to_data<float>());
  ExpectNear(reference([](float v) { return std::exp(v); }),
             t.exp().to_data<float>());
  ExpectNear(reference([](float v) { return std::tanh(v); }),
             t.tanh().to_data<float>());
  ExpectNear(reference([](float v) { return v > 0 ? v : 0; }),
             t.relu().to_data<float>());
  ExpectNear(reference([](float v) { return 1 / (1 + std::exp(-v)); }),
             t.sigmoid().to_data<float>());
  ExpectNear(reference([](float v) {
               return 0.5f * v * (1 + std::erf(v / std::sqrt(2.0f)));
             }),
             t.gelu().to_data<float>(), 1e-5f);
  ExpectNear(
      reference([](float v) { return std::min(std::max(v, -1.0f), 2.0f); }),
      t.clamp(-1, 2).to_data<float>());
  const auto positive = t.abs() + 0.5;
  ExpectNear(reference([](float v) { return std::log(std::fabs(v) + 0.5f); }),
             positive.log().to_data<float>());
  ExpectNear(reference([](float v) { return std::sqrt(std::fabs(v) + 0.5f); }),
             positive.sqrt().to_data<float>());
}

TEST(UnaryTest, SigmoidSaturatesWithoutNan) {
  const auto t = Tensor<1>::FromData<float>({-1000, 1000}, {2});
  EXPECT_EQ((std::vector<float>{0, 1}), t.sigmoid().to_data<float>());
}

TEST(UnaryTest, WorksOnHalfPrecisionAndDouble) {
  const auto h = Tensor<1>::FromData<float>({1, 4, 9}, {3}).to(DType::kF16);
  const auto r = h.sqrt();
  EXPECT_EQ(DType::kF16, r.dtype());
  EXPECT_EQ((std::vector<float>{1, 2, 3}), r.to_data<float>());
  const auto d = Tensor<1>::FromData<double>({0.25}, {1});
  EXPECT_EQ(0.5, d.sqrt().item<double>());
}

TEST(CompareTest, ComparisonsGiveBoolMasks) {
  const auto a = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  const auto b = Tensor<1>::FromData<float>({3, 2, 1}, {3});
  EXPECT_EQ((std::vector<bool>{false, true, false}),
            equal(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{true, false, true}),
            not_equal(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{true, false, false}),
            less(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{true, true, false}),
            less_equal(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{false, false, true}),
            greater(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{false, true, true}),
            greater_equal(a, b).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{false, true, true}),
            a.greater(1.5).to_data<bool>());
  const auto mask = a.greater(1.5);
  EXPECT_EQ((std::vector<bool>{true, false, false}),
            mask.logical_not().to_data<bool>());
  EXPECT_EQ((std::vector<bool>{false, true, false}),
            logical_and(mask, a.less(2.5)).to_data<bool>());
  EXPECT_EQ((std::vector<bool>{true, true, true}),
            logical_or(mask, a.less(2.5)).to_data<bool>());
}

TEST(WhereTest, SelectsWithBroadcasting) {
  const auto condition = Tensor<2, Bool>::FromData<bool>({true, false}, {2, 1});
  const auto on_true = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  const auto on_false = Tensor<0>::Full({}, -1);
  const auto r = where(condition, on_true, on_false);
  EXPECT_EQ((Shape{2, 3}), r.shape());
  EXPECT_EQ((std::vector<float>{1, 2, 3, -1, -1, -1}), r.to_data<float>());
}

TEST(WhereTest, MaskFillReplacesMaskedEntries) {
  const auto scores = Tensor<2>::FromData(Iota(6), {2, 3});
  const auto causal = greater(Tensor<1>::Arange(0, 3).unsqueeze(0),
                              Tensor<1>::Arange(0, 2).unsqueeze(1));  // [2, 3]
  const auto filled =
      scores.mask_fill(causal, -std::numeric_limits<float>::infinity());
  const auto data = filled.to_data<float>();
  EXPECT_EQ(0, data[0]);
  EXPECT_TRUE(std::isinf(data[1]));
  EXPECT_EQ(4, data[4]);
  EXPECT_TRUE(std::isinf(data[5]));
}

TEST(InPlaceTest, AddMulFillAssign) {
  auto t = Tensor<2>::Zeros({2, 2});
  t.add_(Tensor<1>::FromData<float>({1, 2}, {2}));
  EXPECT_EQ((std::vector<float>{1, 2, 1, 2}), t.to_data<float>());
  t.mul_(3.0);
  EXPECT_EQ((std::vector<float>{3, 6, 3, 6}), t.to_data<float>());
  t.assign_(Tensor<2>::Ones({2, 2}).t());
  EXPECT_EQ((std::vector<float>{1, 1, 1, 1}), t.to_data<float>());
  t.fill_(7);
  EXPECT_EQ((std::vector<float>{7, 7, 7, 7}), t.to_data<float>());
}

TEST(InPlaceTest, HalfPrecisionInPlaceRoundsBack) {
  auto t = Tensor<1>::Ones({3}, Device::Cpu(), DType::kBF16);
  t.add_(Tensor<1>::Full({3}, 0.5, Device::Cpu(), DType::kBF16));
  EXPECT_EQ(DType::kBF16, t.dtype());
  EXPECT_EQ((std::vector<float>{1.5, 1.5, 1.5}), t.to_data<float>());
}

}  // namespace
}  // namespace kindling
