// OneDnnSgemm against a double-precision reference: every pair of
// transposes, leading dimensions wider than the matrices, accumulation, and
// the rules that send a shape to OpenBLAS instead (too small, too thin, not
// yet seen twice), through gemm.h's Gemm as the kernels call it.
#include "kindling/backend/cpu/onednn_gemm.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"

namespace kindling::cpu {
namespace {

struct Case {
  bool transpose_a, transpose_b;
  int64_t m, n, k;
  int64_t pad;  // added to every leading dimension
  bool accumulate;
};

// Operands: op(a) is m x k, op(b) k x n, each stored row-major with its
// leading dimension `pad` wider than a row.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
};

Operands MakeOperands(const Case& t, std::mt19937& random) {
  std::uniform_real_distribution<float> value(-1, 1);
  const int64_t a_rows = t.transpose_a ? t.k : t.m;
  const int64_t b_rows = t.transpose_b ? t.n : t.k;
  Operands o;
  o.lda = (t.transpose_a ? t.m : t.k) + t.pad;
  o.ldb = (t.transpose_b ? t.k : t.n) + t.pad;
  o.ldc = t.n + t.pad;
  o.a.resize(a_rows * o.lda);
  o.b.resize(b_rows * o.ldb);
  o.c.resize(t.m * o.ldc);
  for (float& x : o.a) x = value(random);
  for (float& x : o.b) x = value(random);
  for (float& x : o.c) x = value(random);
  return o;
}

// Expected() is the product (plus c when accumulating) in double.
std::vector<double> Expected(const Case& t, const Operands& o) {
  std::vector<double> c(o.c.begin(), o.c.end());
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double sum = t.accumulate ? c[i * o.ldc + j] : 0.0;
      for (int64_t p = 0; p < t.k; ++p) {
        const double a =
            t.transpose_a ? o.a[p * o.lda + i] : o.a[i * o.lda + p];
        const double b =
            t.transpose_b ? o.b[j * o.ldb + p] : o.b[p * o.ldb + j];
        sum += a * b;
      }
      c[i * o.ldc + j] = sum;
    }
  }
  return c;
}

bool RunOneDnn(const Case& t, Operands& o) {
  return OneDnnSgemm(t.transpose_a, t.transpose_b, t.m, t.n, t.k, o.a.data(),
                     o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, t.accumulate);
}

// ExpectProduct() checks o.c against `expected` in the m x n block and
// unchanged padding beyond it.
void ExpectProduct(const Case& t, const Operands& o,
                   const std::vector<double>& expected,
                   const std::vector<float>& before) {
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < o.ldc; ++j) {
      const int64_t at = i * o.ldc + j;
      if (j >= t.n) {
        ASSERT_EQ(o.c[at], before[at])
            << "padding written at " << i << "," << j;
      } else {
        ASSERT_NEAR(o.c[at], expected[at], 1e-5 * std::sqrt(double(t.k)) + 1e-5)
            << "at " << i << "," << j;
      }
    }
  }
}

class OneDnnGemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(OneDnnGemmTest, MatchesTheReferenceFromTheSecondCallOn) {
  const Case t = GetParam();
  std::mt19937 random(5);
  Operands o = MakeOperands(t, random);
  const std::vector<float> before = o.c;
  const std::vector<double> expected = Expected(t, o);
  EXPECT_FALSE(RunOneDnn(t, o)) << "the first call of a shape is OpenBLAS's";
  EXPECT_EQ(o.c, before) << "a declined call wrote c";
  ASSERT_TRUE(RunOneDnn(t, o))
      << "the second call of a shape should build a plan";
  ExpectProduct(t, o, expected, before);
  o.c = before;
  ASSERT_TRUE(RunOneDnn(t, o)) << "the plan is kept";
  ExpectProduct(t, o, expected, before);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OneDnnGemmTest,
    ::testing::Values(
        // The four pairs of transposes, ragged sizes.
        Case{false, false, 37, 45, 53, 0, false},
        Case{false, true, 37, 45, 53, 0, false},
        Case{true, false, 37, 45, 53, 0, false},
        Case{true, true, 37, 45, 53, 0, false},
        // Leading dimensions wider than the rows, and c += a b.
        Case{false, true, 64, 48, 40, 7, false},
        Case{true, false, 64, 48, 40, 3, true},
        Case{false, false, 16, 16, 128, 5, true},
        // The MLP's and the attention's shapes.
        Case{false, true, 128, 256, 784, 0, false},
        Case{true, false, 256, 784, 128, 0, false},
        Case{false, true, 64, 64, 32, 0, false}));

TEST(OneDnnGemmRulesTest, SmallAndThinShapesStayWithOpenBlas) {
  std::mt19937 random(6);
  for (const Case& t : {Case{false, false, 15, 256, 256, 0, false},
                        Case{false, false, 256, 10, 256, 0, false},
                        Case{false, false, 16, 16, 16, 0, false}}) {
    Operands o = MakeOperands(t, random);
    for (int call = 0; call < 3; ++call) {
      EXPECT_FALSE(RunOneDnn(t, o)) << t.m << "x" << t.n << "x" << t.k;
    }
  }
}

TEST(OneDnnGemmRulesTest, GemmGivesTheSameProductEitherWay) {
  // gemm.h's Gemm: OpenBLAS on the first call, oneDNN from the second.
  const Case t{false, true, 96, 80, 72, 0, false};
  std::mt19937 random(7);
  Operands o = MakeOperands(t, random);
  const std::vector<float> before = o.c;
  const std::vector<double> expected = Expected(t, o);
  for (int call = 0; call < 3; ++call) {
    o.c = before;
    Gemm<float>(CblasNoTrans, CblasTrans, t.m, t.n, t.k, o.a.data(), o.lda,
                o.b.data(), o.ldb, o.c.data(), o.ldc);
    ExpectProduct(t, o, expected, before);
  }
}

TEST(OneDnnGemmRulesTest, ManyShapesOnOneThreadStayCorrect) {
  // More shapes than a thread keeps plans for: the cache is dropped and
  // rebuilt, and every product is still right.
  std::mt19937 random(8);
  for (int64_t extra = 0; extra < 300; ++extra) {
    const Case t{false, false, 32, 32 + extra % 5, 32 + extra, 0, false};
    Operands o = MakeOperands(t, random);
    const std::vector<float> before = o.c;
    const std::vector<double> expected = Expected(t, o);
    RunOneDnn(t, o);
    o.c = before;
    ASSERT_TRUE(RunOneDnn(t, o)) << "shape " << extra;
    ExpectProduct(t, o, expected, before);
  }
}

}  // namespace
}  // namespace kindling::cpu
