// matmul against a naive triple loop on odd shapes, transposed operands and
// broadcast batches.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

// Reference [M, K] x [K, N] in double.
std::vector<float> NaiveMatmul(const std::vector<float>& a,
                               const std::vector<float>& b, int m, int k,
                               int n) {
  std::vector<float> c(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += double{a[i * k + p]} * b[p * n + j];
      c[i * n + j] = static_cast<float>(sum);
    }
  return c;
}

void ExpectNear(const std::vector<float>& expected,
                const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(expected[i], actual[i], 1e-4f * (1 + std::abs(expected[i])))
        << i;
  }
}

class MatmulShapeTest : public ::testing::TestWithParam<std::array<int, 3>> {};

TEST_P(MatmulShapeTest, MatchesNaiveLoop) {
  const auto [m, k, n] = GetParam();
  Generator generator(m * 100 + k * 10 + n);
  const auto a = Tensor<2>::RandomNormal({m, k}, generator);
  const auto b = Tensor<2>::RandomNormal({k, n}, generator);
  const auto c = matmul(a, b);
  ASSERT_EQ((Shape{m, n}), c.shape());
  ExpectNear(NaiveMatmul(a.to_data<float>(), b.to_data<float>(), m, k, n),
             c.to_data<float>());
}

INSTANTIATE_TEST_SUITE_P(OddShapes, MatmulShapeTest,
                         ::testing::Values(std::array<int, 3>{1, 1, 1},
                                           std::array<int, 3>{7, 13, 5},
                                           std::array<int, 3>{1, 9, 4},
                                           std::array<int, 3>{6, 1, 3},
                                           std::array<int, 3>{33, 17, 1},
                                           std::array<int, 3>{64, 65, 63}));

TEST(MatmulTest, TransposedOperandsNeedNoCopy) {
  Generator generator(3);
  const auto a = Tensor<2>::RandomNormal({13, 7}, generator);  // use a.t()
  const auto b = Tensor<2>::RandomNormal({5, 13}, generator);  // use b.t()
  const auto c = matmul(a.t(), b.t());                         // [7, 5]
  ExpectNear(NaiveMatmul(a.t().contiguous().to_data<float>(),
                         b.t().contiguous().to_data<float>(), 7, 13, 5),
             c.to_data<float>());
}

TEST(MatmulTest, SlicedOperand) {
  Generator generator(4);
  const auto big = Tensor<2>::RandomNormal({8, 10}, generator);
  const auto a = big.narrow(1, 2, 5);  // [8, 5], row stride 10
  const auto b = Tensor<2>::RandomNormal({5, 3}, generator);
  ExpectNear(
      NaiveMatmul(a.contiguous().to_data<float>(), b.to_data<float>(), 8, 5, 3),
      matmul(a, b).to_data<float>());
}

TEST(MatmulTest, BatchedMatchesPerBatchLoop) {
  Generator generator(5);
  const auto a = Tensor<3>::RandomNormal({3, 7, 13}, generator);
  const auto b = Tensor<3>::RandomNormal({3, 13, 5}, generator);
  const auto c = matmul(a, b);
  ASSERT_EQ((Shape{3, 7, 5}), c.shape());
  for (int batch = 0; batch < 3; ++batch) {
    const auto ab = a.narrow(0, batch, 1).squeeze(0);
    const auto bb = b.narrow(0, batch, 1).squeeze(0);
    ExpectNear(NaiveMatmul(ab.to_data<float>(), bb.to_data<float>(), 7, 13, 5),
               c.narrow(0, batch, 1).squeeze(0).to_data<float>());
  }
}

TEST(MatmulTest, BatchDimsBroadcast) {
  Generator generator(6);
  const auto a = Tensor<4>::RandomNormal({2, 1, 4, 3}, generator);
  const auto b = Tensor<3>::RandomNormal({5, 3, 2}, generator);
  const auto c = matmul(a, b);
  ASSERT_EQ((Shape{2, 5, 4, 2}), c.shape());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) {
      const auto ai = a.narrow(0, i, 1).squeeze(0).squeeze(0);
      const auto bj = b.narrow(0, j, 1).squeeze(0);
      ExpectNear(NaiveMatmul(ai.to_data<float>(), bj.to_data<float>(), 4, 3, 2),
                 c.narrow(0, i, 1)
                     .narrow(1, j, 1)
                     .reshape<2>({4, 2})
                     .to_data<float>());
    }
}

TEST(MatmulTest, BatchedTimesSharedMatrixFoldsIntoOneGemm) {
  Generator generator(7);
  const auto x = Tensor<3>::RandomNormal({4, 6, 8}, generator);
  const auto w = Tensor<2>::RandomNormal({8, 3}, generator);
  const auto y = matmul(x, w);
  ASSERT_EQ((Shape{4, 6, 3}), y.shape());
  ExpectNear(NaiveMatmul(x.to_data<float>(), w.to_data<float>(), 24, 8, 3),
             y.to_data<float>());
  // And with a transposed weight (the Linear layer's x W^T).
  const auto w_t = Tensor<2>::RandomNormal({3, 8}, generator);
  ExpectNear(NaiveMatmul(x.to_data<float>(),
                         w_t.t().contiguous().to_data<float>(), 24, 8, 3),
             matmul(x, w_t.t()).to_data<float>());
}

TEST(MatmulTest, DoubleAndInteger) {
  const auto a = Tensor<2>::FromData<double>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ((std::vector<double>{7, 10, 15, 22}),
            matmul(a, a).to_data<double>());
  const auto i = Tensor<2, Int>::FromData<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ((std::vector<int64_t>{14, 32, 32, 77}),
            matmul(i, i.t()).to_data<int64_t>());
}

TEST(MatmulTest, HalfPrecisionComputesInFloat) {
  const auto a =
      Tensor<2>::FromData<float>({1, 2, 3, 4}, {2, 2}).to(DType::kBF16);
  const auto c = matmul(a, a);
  EXPECT_EQ(DType::kBF16, c.dtype());
  EXPECT_EQ((std::vector<float>{7, 10, 15, 22}), c.to_data<float>());
}

TEST(MatmulBiasTest, EqualsMatmulPlusBias) {
  Generator generator(11);
  const auto x = Tensor<3>::RandomNormal({3, 5, 8}, generator);
  const auto w = Tensor<2>::RandomNormal({6, 8}, generator);  // used as w.t()
  const auto b = Tensor<1>::RandomNormal({6}, generator);
  const auto y = matmul_bias(x, w.t(), b);
  ASSERT_EQ((Shape{3, 5, 6}), y.shape());
  EXPECT_EQ((matmul(x, w.t()) + b).to_data<float>(), y.to_data<float>());
  // f64, and bf16, whose product is rounded before the add as the two ops
  // round it.
  const auto x64 = x.to(DType::kF64);
  EXPECT_EQ((matmul(x64, w.t().to(DType::kF64)) + b.to(DType::kF64))
                .to_data<double>(),
            matmul_bias(x64, w.t().to(DType::kF64), b.to(DType::kF64))
                .to_data<double>());
  const auto x16 = x.to(DType::kBF16);
  const auto w16 = w.t().to(DType::kBF16);
  const auto b16 = b.to(DType::kBF16);
  const auto y16 = matmul_bias(x16, w16, b16);
  EXPECT_EQ(DType::kBF16, y16.dtype());
  EXPECT_EQ((matmul(x16, w16) + b16).to_data<float>(), y16.to_data<float>());
}

TEST(MatmulBiasTest, EmptyInputsGiveTheBias) {
  const auto b = Tensor<1>::FromData<float>({1, 2, 3}, {3});
  EXPECT_EQ((Shape{0, 3}),
            matmul_bias(Tensor<2>::Zeros({0, 4}), Tensor<2>::Zeros({4, 3}), b)
                .shape());
  EXPECT_EQ((std::vector<float>{1, 2, 3, 1, 2, 3}),
            matmul_bias(Tensor<2>::Zeros({2, 0}), Tensor<2>::Zeros({0, 3}), b)
                .to_data<float>());
}

TEST(MatmulTest, EmptyInnerDimensionGivesZeros) {
  const auto a = Tensor<2>::Zeros({2, 0});
  const auto b = Tensor<2>::Zeros({0, 3});
  EXPECT_EQ((std::vector<float>(6, 0.0f)), matmul(a, b).to_data<float>());
}

}  // namespace
}  // namespace kindling
