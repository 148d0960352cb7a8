// The fused attention's tile products (nn/cpu/attention_products.h) against
// a plain triple loop: every bound, both transpositions of each operand,
// overwrite and accumulate, on shapes with ragged panels (rows not a
// multiple of eight or six), ragged registers (columns not a multiple of
// sixteen or eight, and a last block of exactly eight) and bounds that fall
// before, inside and past a tile.
#include "kindling/nn/cpu/attention_products.h"

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kindling/backend/cpu/vector_math.h"

namespace kindling::nn {
namespace {

using Kind = ProductBound::Kind;

struct Case {
  int64_t m, n, k;
  bool transpose_a, transpose_b, add;
  ProductBound bound;
};

std::string Describe(const Case& c) {
  return absl::StrFormat("m=%d n=%d k=%d ta=%d tb=%d add=%d kind=%d offset=%d",
                         c.m, c.n, c.k, c.transpose_a, c.transpose_b, c.add,
                         static_cast<int>(c.bound.kind), c.bound.offset);
}

// Operands: op(a) [m, k] with the entries the bound promises zero set to
// zero, op(b) [k, n], c [m, n] prefilled; leading dimensions wider than the
// matrices, as the attention's heads are.
template <class T>
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<T> a, b, c;

  T& A(const Case& x, int64_t r, int64_t d) {
    return x.transpose_a ? a[d * lda + r] : a[r * lda + d];
  }
  T& B(const Case& x, int64_t d, int64_t j) {
    return x.transpose_b ? b[j * ldb + d] : b[d * ldb + j];
  }
};

template <class T>
Operands<T> MakeOperands(const Case& x, std::mt19937& random) {
  std::uniform_real_distribution<double> uniform(-1, 1);
  Operands<T> o;
  o.lda = (x.transpose_a ? x.m : x.k) + 3;
  o.ldb = (x.transpose_b ? x.k : x.n) + 5;
  o.ldc = x.n + 2;
  o.a.resize((x.transpose_a ? x.k : x.m) * o.lda + 1);
  o.b.resize((x.transpose_b ? x.n : x.k) * o.ldb + 1);
  o.c.resize(x.m * o.ldc + 1);
  for (T& v : o.a) v = static_cast<T>(uniform(random));
  for (T& v : o.b) v = static_cast<T>(uniform(random));
  for (T& v : o.c) v = static_cast<T>(uniform(random));
  for (int64_t r = 0; r < x.m; ++r) {
    for (int64_t d = 0; d < x.k; ++d) {
      const bool beyond =
          (x.bound.kind == Kind::kDepthBelow && d >= r + x.bound.offset) ||
          (x.bound.kind == Kind::kDepthFrom && d < r + x.bound.offset);
      if (beyond) o.A(x, r, d) = 0;
    }
  }
  return o;
}

// Needed() is whether the bound asks for entry (r, j) of c.
bool Needed(const Case& x, int64_t r, int64_t j) {
  return x.bound.kind != Kind::kColumnsBelow || j < r + x.bound.offset;
}

template <class T>
using Product = void (*)(bool, bool, int64_t, int64_t, int64_t, const T*,
                         int64_t, const T*, int64_t, T*, int64_t,
                         cpu::GemmAccumulate, ProductBound);

// ExpectProduct() runs `product` on random operands and checks every
// needed entry of c against the triple loop, and that no entry outside the
// m x n matrix moved.
template <class T>
void ExpectProduct(const Case& x, Product<T> product, double tolerance) {
  std::mt19937 random(static_cast<uint32_t>(x.m * 131 + x.n * 17 + x.k));
  Operands<T> o = MakeOperands<T>(x, random);
  const std::vector<T> before = o.c;
  product(x.transpose_a, x.transpose_b, x.m, x.n, x.k, o.a.data(), o.lda,
          o.b.data(), o.ldb, o.c.data(), o.ldc,
          x.add ? cpu::GemmAccumulate::kAdd : cpu::GemmAccumulate::kOverwrite,
          x.bound);
  for (int64_t r = 0; r < x.m; ++r) {
    for (int64_t j = 0; j < o.ldc; ++j) {
      const int64_t at = r * o.ldc + j;
      if (j >= x.n) {
        ASSERT_EQ(o.c[at], before[at]) << Describe(x) << " wrote (" << r << ", "
                                       << j << ") past the columns";
        continue;
      }
      if (!Needed(x, r, j)) continue;
      double want = x.add ? before[at] : 0;
      for (int64_t d = 0; d < x.k; ++d) want += o.A(x, r, d) * o.B(x, d, j);
      ASSERT_NEAR(o.c[at], want, tolerance)
          << Describe(x) << " at (" << r << ", " << j << ")";
    }
  }
  ASSERT_EQ(o.c.back(), before.back()) << Describe(x) << " wrote past c";
}

std::vector<Case> Cases() {
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1},   {8, 32, 32},  {13, 37, 5},   {6, 24, 9},
      {12, 29, 8}, {64, 64, 32}, {70, 48, 130}, {3, 70, 17}};
  const std::vector<ProductBound> bounds = {
      {Kind::kAll, 0},           {Kind::kColumnsBelow, 1},
      {Kind::kColumnsBelow, -9}, {Kind::kColumnsBelow, 20},
      {Kind::kDepthBelow, 1},    {Kind::kDepthBelow, 40},
      {Kind::kDepthFrom, 0},     {Kind::kDepthFrom, -12},
      {Kind::kDepthFrom, 9}};
  std::vector<Case> cases;
  for (const auto& [m, n, k] : shapes) {
    for (const ProductBound& bound : bounds) {
      for (int flags = 0; flags < 8; ++flags) {
        cases.push_back({m, n, k, (flags & 1) != 0, (flags & 2) != 0,
                         (flags & 4) != 0, bound});
      }
    }
  }
  return cases;
}

TEST(AttentionProductsTest, TileProductMatchesTheTripleLoop) {
  // The path this CPU takes for f32 (the AVX-512 panels where it has
  // AVX-512, else the AVX2 ones), and f64's (cpu::Gemm).
  for (const Case& x : Cases()) {
    ExpectProduct<float>(x, &TileProduct<float>, 2e-5);
    ExpectProduct<double>(x, &TileProduct<double>, 1e-12);
  }
}

TEST(AttentionProductsTest, Avx2PanelsMatchTheTripleLoop) {
  // Every CPU Kindling's kernels run on has AVX2 (they are built for
  // x86-64-v3); an AVX-512 CPU runs them here too.
  for (const Case& x : Cases()) {
    ExpectProduct<float>(x, &Avx2PanelProductF32, 2e-5);
  }
}

TEST(AttentionProductsTest, Avx512PanelsMatchTheTripleLoop) {
  if (!cpu::HasAvx512()) {
    GTEST_SKIP() << "this CPU has no AVX-512 (or KINDLING_MAX_CPU_ISA caps "
                    "it): its panels cannot run; the AVX2 panels' test covers "
                    "the path it takes";
  }
  for (const Case& x : Cases()) {
    ExpectProduct<float>(x, &Avx512PanelProductF32, 2e-5);
  }
}

TEST(AttentionProductsTest, OverwriteWithNoDepthWritesZeros) {
  // A key no query of the block sees still gets its gradient overwritten:
  // with zeros, not left as it was.
  const Case x{5, 20, 6, false, false, false, {Kind::kDepthFrom, 50}};
  ExpectProduct<float>(x, &TileProduct<float>, 0);
}

}  // namespace
}  // namespace kindling::nn
