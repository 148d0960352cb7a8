// matmul of a transposed f32 lhs (a^T b, a Linear layer's weight gradient):
// the product against a double-precision reference on views with wide
// leading dimensions and slab edges off the 16-row tile, and the bits of
// the path matmul.cc's PacksTransposedLhs rule picks on this CPU: a large
// lhs summed over a short k is copied to row-major first on a CPU without
// AVX-512 (the GEMM then reads a plain matrix); small ones, long sums and
// AVX-512 CPUs keep the transposed product.
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

// Case: out [m, n] = a^T b, a a [k, m] window (columns [first_column,
// first_column + m)) of a [k, width] matrix, b [k, n].
struct Case {
  std::string name;
  int64_t k, m, n, width, first_column;
  bool packed_without_avx512;  // the rule's answer on such a CPU
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> Cases() {
  return {
      // The quickstart MLP's first layer: 784 x 256 over a batch of 128.
      {"mlp_first_layer", 128, 784, 256, 784, 0, true},
      // A window of a wider matrix (leading dimension 1200), rows off the
      // 16-row tile and a sum over an odd count (the copy's row tails); the
      // floor exactly (128 x 512 = 65536 elements) and just below it.
      {"window_odd_rows", 103, 1001, 37, 1200, 150, true},
      {"at_the_floor", 128, 512, 96, 512, 0, true},
      {"below_the_floor", 128, 511, 96, 511, 0, false},
      // The MLP's hidden layers (a 128 KiB lhs) and a long sum (the
      // char-LM's weight gradients): never copied.
      {"hidden_layer", 128, 256, 256, 256, 0, false},
      {"long_sum", 1024, 128, 64, 128, 0, false},
  };
}

std::vector<float> RandomValues(int64_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(engine);
  return values;
}

// Product: random operands of a Case and matmul's result on them.
struct Product {
  std::vector<float> a;    // [k, width]
  std::vector<float> b;    // [k, n]
  std::vector<float> out;  // [m, n]: matmul(a's window transposed, b)
};

Product TransposedProduct(const Case& c, uint32_t seed) {
  Product p{
      RandomValues(c.k * c.width, seed), RandomValues(c.k * c.n, seed + 1), {}};
  const Tensor<2> a = Tensor<2>::FromData(p.a, {c.k, c.width});
  const Tensor<2> b = Tensor<2>::FromData(p.b, {c.k, c.n});
  p.out = matmul(a.narrow(1, c.first_column, c.m).t(), b).to_data<float>();
  return p;
}

// GemmBits() is the f32 product as gemm.h computes it from the stored
// operand: a^T b read transposed, or a row-major copy of a^T times b.
std::vector<float> GemmBits(const Case& c, const std::vector<float>& a,
                            const std::vector<float>& b, bool packed) {
  std::vector<float> out(c.m * c.n);
  const float* a_window = a.data() + c.first_column;
  if (!packed) {
    cpu::ParallelGemm<float>(CblasTrans, CblasNoTrans, c.m, c.n, c.k, a_window,
                             c.width, b.data(), c.n, out.data(), c.n);
    return out;
  }
  std::vector<float> rows(c.m * c.k);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t p = 0; p < c.k; ++p)
      rows[i * c.k + p] = a_window[p * c.width + i];
  }
  cpu::ParallelGemm<float>(CblasNoTrans, CblasNoTrans, c.m, c.n, c.k,
                           rows.data(), c.k, b.data(), c.n, out.data(), c.n);
  return out;
}

class MatmulTransposedLhsTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulTransposedLhsTest, MatchesTheDoubleReference) {
  const Case c = GetParam();
  const Product p = TransposedProduct(c, 1);
  ASSERT_EQ(p.out.size(), static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t r = 0; r < c.k; ++r) {
        const double term =
            static_cast<double>(p.a[r * c.width + c.first_column + i]) *
            p.b[r * c.n + j];
        sum += term;
        magnitude += std::fabs(term);
      }
      ASSERT_NEAR(p.out[i * c.n + j], sum, 1e-6 * magnitude + 1e-6)
          << c.name << " at (" << i << ", " << j << ")";
    }
  }
}

TEST_P(MatmulTransposedLhsTest, HasTheBitsOfThePathTheRulePicks) {
  const Case c = GetParam();
  const bool packed = c.packed_without_avx512 && !cpu::HasAvx512();
  const Product p = TransposedProduct(c, 3);
  EXPECT_EQ(p.out, GemmBits(c, p.a, p.b, packed))
      << c.name << (packed ? ": the row-major copy's" : ": a^T b's");
}

INSTANTIATE_TEST_SUITE_P(Shapes, MatmulTransposedLhsTest,
                         ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kindling
