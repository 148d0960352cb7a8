// matmul of a transposed f32 lhs (a^T b, a Linear layer's weight gradient):
// the product against gemm_cases.h's double-precision reference on views
// with wide leading dimensions, a storage offset and slab edges off the
// 16-row tile, and the bits of the path matmul.cc's PacksTransposedLhs rule
// picks on this CPU: a large lhs summed over a short k is copied to
// row-major first on a CPU without AVX-512 (the GEMM then reads a plain
// matrix); small ones, long sums and AVX-512 CPUs keep the transposed
// product.
#include <cblas.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/tensor/tensor.h"
#include "tests/backend/cpu/gemm_cases.h"

namespace kindling {
namespace {

// LhsCase: out [m, n] = a^T b, a the [k, m] window at columns
// [pad, pad + m) of a [k, m + pad] matrix (a view with a storage offset
// where pad > 0), b the first n columns of a [k, n + pad] one.
struct LhsCase {
  std::string name;
  int64_t k, m, n, pad;
  bool packed_without_avx512;  // the rule's answer on such a CPU
};

void PrintTo(const LhsCase& c, std::ostream* os) { *os << c.name; }

std::vector<LhsCase> Cases() {
  return {
      // The quickstart MLP's first layer: 784 x 256 over a batch of 128.
      {"mlp_first_layer", 128, 784, 256, 0, true},
      // A window of a wider matrix (leading dimension 1200), rows off the
      // 16-row tile and a sum over an odd count (the copy's row tails); the
      // floor exactly (128 x 512 = 65536 elements) and just below it.
      {"window_odd_rows", 103, 1001, 37, 199, true},
      {"at_the_floor", 128, 512, 96, 0, true},
      {"below_the_floor", 128, 511, 96, 0, false},
      // The MLP's hidden layers (a 128 KiB lhs) and a long sum (the
      // char-LM's weight gradients): never copied.
      {"hidden_layer", 128, 256, 256, 0, false},
      {"long_sum", 1024, 128, 64, 0, false},
  };
}

// Product: random operands of a case (`operands.a` starting at the lhs
// window's first element) and matmul's result on them, [m, n].
struct Product {
  cpu::Case gemm;
  cpu::Operands operands;
  std::vector<float> out;
};

Product TransposedProduct(const LhsCase& c, uint32_t seed) {
  Product p{{.transpose_a = true,
             .transpose_b = false,
             .m = c.m,
             .n = c.n,
             .k = c.k,
             .pad = c.pad,
             .accumulate = false},
            {},
            {}};
  std::mt19937 random(seed);
  p.operands = cpu::MakeOperands(p.gemm, random);
  cpu::Operands& o = p.operands;
  const Tensor<2> a =
      Tensor<2>::FromData(o.a, {c.k, o.lda}).narrow(1, c.pad, c.m);
  const Tensor<2> b = Tensor<2>::FromData(o.b, {c.k, o.ldb}).narrow(1, 0, c.n);
  p.out = matmul(a.t(), b).to_data<float>();
  o.a.erase(o.a.begin(), o.a.begin() + c.pad);
  return p;
}

// GemmBits() is the f32 product as gemm.h computes it from the stored
// operands: a^T b read transposed, or a row-major copy of a^T times b.
std::vector<float> GemmBits(const Product& p, bool packed) {
  const cpu::Case& t = p.gemm;
  const cpu::Operands& o = p.operands;
  std::vector<float> out(t.m * t.n);
  if (!packed) {
    cpu::ParallelGemm<float>(CblasTrans, CblasNoTrans, t.m, t.n, t.k,
                             o.a.data(), o.lda, o.b.data(), o.ldb, out.data(),
                             t.n);
    return out;
  }
  std::vector<float> rows(t.m * t.k);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t r = 0; r < t.k; ++r) rows[i * t.k + r] = o.a[r * o.lda + i];
  }
  cpu::ParallelGemm<float>(CblasNoTrans, CblasNoTrans, t.m, t.n, t.k,
                           rows.data(), t.k, o.b.data(), o.ldb, out.data(),
                           t.n);
  return out;
}

class MatmulTransposedLhsTest : public ::testing::TestWithParam<LhsCase> {};

TEST_P(MatmulTransposedLhsTest, MatchesTheDoubleReference) {
  Product p = TransposedProduct(GetParam(), 1);
  ASSERT_EQ(p.out.size(), static_cast<size_t>(p.gemm.m * p.gemm.n));
  cpu::Operands& o = p.operands;
  const std::vector<double> expected = cpu::Expected(p.gemm, o);
  const std::vector<float> before = o.c;
  for (int64_t i = 0; i < p.gemm.m; ++i) {
    for (int64_t j = 0; j < p.gemm.n; ++j) {
      o.c[i * o.ldc + j] = p.out[i * p.gemm.n + j];
    }
  }
  cpu::ExpectProduct(p.gemm, o, expected, before);
}

TEST_P(MatmulTransposedLhsTest, HasTheBitsOfThePathTheRulePicks) {
  const LhsCase& c = GetParam();
  const bool packed = c.packed_without_avx512 && !cpu::HasAvx512();
  const Product p = TransposedProduct(c, 3);
  EXPECT_EQ(p.out, GemmBits(p, packed))
      << c.name << (packed ? ": the row-major copy's" : ": a^T b's");
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTransposedLhsTest,
                         ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kindling
