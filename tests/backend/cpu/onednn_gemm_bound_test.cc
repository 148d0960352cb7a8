// The bound on the shapes oneDNN keeps plans for (onednn_gemm.h), in a
// binary of its own: the bound is process-wide, so filling it here must not
// send the other tests' shapes to OpenBLAS.
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/onednn_gemm.h"
#include "tests/backend/cpu/gemm_cases.h"

namespace kindling::cpu {
namespace {

TEST(OneDnnGemmBoundTest, PastTheBoundOnShapesOpenBlasTakesOver) {
  // More shapes than the process keeps plans for: once the bound is met,
  // new shapes stay with OpenBLAS (declined, c untouched) while admitted
  // ones keep running on oneDNN, and Gemm's product is right either way.
  std::mt19937 random(8);
  const Case first{false, false, 32, 32, 33, 0, false};
  Operands kept = MakeOperands(first, random);
  ASSERT_TRUE(RunOneDnn(first, kept));
  int64_t declined = 0;
  for (int64_t extra = 0; extra < 300; ++extra) {
    const Case t{false, false, 32, 32 + extra % 5, 40 + extra, 0, false};
    Operands o = MakeOperands(t, random);
    const std::vector<float> before = o.c;
    const std::vector<double> expected = Expected(t, o);
    if (!RunOneDnn(t, o)) {
      ++declined;
      EXPECT_EQ(o.c, before) << "a declined call wrote c";
      EXPECT_FALSE(RunOneDnn(t, o)) << "a declined shape stays declined";
      Gemm<float>(CblasNoTrans, CblasNoTrans, t.m, t.n, t.k, o.a.data(), o.lda,
                  o.b.data(), o.ldb, o.c.data(), o.ldc);
    } else {
      EXPECT_EQ(declined, 0) << "a shape admitted after one was declined";
    }
    ExpectProduct(t, o, expected, before);
  }
  EXPECT_GT(declined, 0) << "300 new shapes never met the bound";
  EXPECT_TRUE(RunOneDnn(first, kept)) << "an admitted shape was dropped";
}

}  // namespace
}  // namespace kindling::cpu
