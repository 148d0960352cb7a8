// OneDnnSgemm against a double-precision reference: every pair of
// transposes, leading dimensions wider than the matrices, accumulation, and
// the rules that send a shape to OpenBLAS instead (too small, too thin;
// past the bound on shapes: onednn_gemm_bound_test), through gemm.h's Gemm
// as the kernels call it, and on several threads (one library per shape,
// whichever thread asks).
#include "kindling/backend/cpu/onednn_gemm.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"
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

}  // namespace
}  // namespace kindling::cpu
