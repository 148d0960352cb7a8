// OneDnnSgemm against a double-precision reference: every pair of
// transposes, leading dimensions wider than the matrices, accumulation, and
// the rules that send a shape to OpenBLAS instead (too small, too thin;
// past the bound on shapes: onednn_gemm_bound_test), through gemm.h's Gemm
// as the kernels call it, and on several threads (one library per shape,
// whichever thread asks), and the weight gradients that gemm.h sends to
// OpenBLAS on a CPU without AVX-512.
#include "kindling/backend/cpu/onednn_gemm.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/vector_math.h"
#include "tests/backend/cpu/gemm_cases.h"

namespace kindling::cpu {
namespace {

class OneDnnGemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(OneDnnGemmTest, MatchesTheReference) {
  const Case t = GetParam();
  std::mt19937 random(5);
  Operands o = MakeOperands(t, random);
  const std::vector<float> before = o.c;
  const std::vector<double> expected = Expected(t, o);
  ASSERT_TRUE(RunOneDnn(t, o)) << "the shape should be oneDNN's";
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
        Case{true, true, 37, 45, 53, 9, true},
        // Rows with gaps go to dnnl_sgemm: the attention's heads read in
        // place from [B, T, H, D] (D = 32 of a 128-float row).
        Case{false, true, 128, 128, 32, 96, false},
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

TEST(OneDnnGemmRulesTest, EveryThreadGetsTheSameBits) {
  // The library is the shape's, not the thread's: a product computed on a
  // fresh thread is bit for bit the one computed here.
  const Case t{false, true, 96, 80, 72, 0, false};
  std::mt19937 random(7);
  Operands o = MakeOperands(t, random);
  const std::vector<float> before = o.c;
  Gemm<float>(CblasNoTrans, CblasTrans, t.m, t.n, t.k, o.a.data(), o.lda,
              o.b.data(), o.ldb, o.c.data(), o.ldc);
  ExpectProduct(t, o, Expected(t, o), before);
  const std::vector<float> here = o.c;
  for (int thread = 0; thread < 3; ++thread) {
    o.c = before;
    std::thread([&] {
      Gemm<float>(CblasNoTrans, CblasTrans, t.m, t.n, t.k, o.a.data(), o.lda,
                  o.b.data(), o.ldb, o.c.data(), o.ldc);
    }).join();
    EXPECT_EQ(o.c, here) << "thread " << thread;
  }
}

// A weight gradient's shape, a^T b over k = 1024 rows (the char-LM's sum
// over 4096 tokens, smaller).
constexpr Case kWeightGradient{true, false, 96, 64, 1024, 0, false};

// RunGemm() is gemm.h's Gemm on `o`, as the kernels call it.
void RunGemm(const Case& t, Operands& o) {
  Gemm<float>(t.transpose_a ? CblasTrans : CblasNoTrans,
              t.transpose_b ? CblasTrans : CblasNoTrans, t.m, t.n, t.k,
              o.a.data(), o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc,
              t.accumulate ? GemmAccumulate::kAdd : GemmAccumulate::kOverwrite);
}

// OpenBlasProduct() is `o`'s product as OpenBLAS computes it.
std::vector<float> OpenBlasProduct(const Case& t, const Operands& o) {
  std::vector<float> c = o.c;
  cblas_sgemm(CblasRowMajor, t.transpose_a ? CblasTrans : CblasNoTrans,
              t.transpose_b ? CblasTrans : CblasNoTrans, t.m, t.n, t.k, 1.0f,
              o.a.data(), o.lda, o.b.data(), o.ldb, t.accumulate ? 1.0f : 0.0f,
              c.data(), o.ldc);
  return c;
}

TEST(OneDnnGemmRulesTest, LongWeightGradientsAreATransposedSumOver1024Rows) {
  // gemm.h's IsLongWeightGradient: a^T b over k >= 1024 rows (the
  // char-LM's weight gradients); below 1024 rows, or transposed otherwise,
  // a product is never sent to OpenBLAS for its shape.
  EXPECT_TRUE(IsLongWeightGradient(CblasTrans, CblasNoTrans, 1024));
  EXPECT_TRUE(IsLongWeightGradient(CblasTrans, CblasNoTrans, 4096));
  EXPECT_FALSE(IsLongWeightGradient(CblasTrans, CblasNoTrans, 1023));
  EXPECT_FALSE(IsLongWeightGradient(CblasNoTrans, CblasNoTrans, 4096));
  EXPECT_FALSE(IsLongWeightGradient(CblasTrans, CblasTrans, 4096));
  EXPECT_FALSE(IsLongWeightGradient(CblasNoTrans, CblasTrans, 4096));
  EXPECT_FALSE(OpenBlasIsFaster(CblasTrans, CblasNoTrans, 1023));
  EXPECT_FALSE(OpenBlasIsFaster(CblasNoTrans, CblasNoTrans, 4096));
}

TEST(OneDnnGemmRulesTest, WeightGradientsFollowTheCpu) {
  // As this CPU runs it: OpenBLAS's bits where gemm.h's rule picks OpenBLAS
  // (AMD Zen 3), oneDNN's everywhere else.
  const bool openblas_wins = OpenBlasIsFaster(CblasTrans, CblasNoTrans, 4096);
  std::mt19937 random(9);
  Operands o = MakeOperands(kWeightGradient, random);
  const std::vector<float> before = o.c;
  const std::vector<float> openblas = OpenBlasProduct(kWeightGradient, o);
  ASSERT_TRUE(RunOneDnn(kWeightGradient, o));
  const std::vector<float> onednn = o.c;
  o.c = before;
  RunGemm(kWeightGradient, o);
  EXPECT_EQ(o.c, openblas_wins ? openblas : onednn)
      << (openblas_wins ? "Zen 3: OpenBLAS's" : "oneDNN's");
  ExpectProduct(kWeightGradient, o, Expected(kWeightGradient, o), before);
}

}  // namespace
}  // namespace kindling::cpu
