// Operands and a double-precision reference for the oneDNN GEMM tests
// (onednn_gemm_test, onednn_gemm_bound_test).
#ifndef KINDLING_TESTS_BACKEND_CPU_GEMM_CASES_H_
#define KINDLING_TESTS_BACKEND_CPU_GEMM_CASES_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/onednn_gemm.h"

namespace kindling::cpu {

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

inline Operands MakeOperands(const Case& t, std::mt19937& random) {
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
inline std::vector<double> Expected(const Case& t, const Operands& o) {
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

inline bool RunOneDnn(const Case& t, Operands& o) {
  return OneDnnSgemm(t.transpose_a, t.transpose_b, t.m, t.n, t.k, o.a.data(),
                     o.lda, o.b.data(), o.ldb, o.c.data(), o.ldc, t.accumulate);
}

// ExpectProduct() checks o.c against `expected` in the m x n block and
// unchanged padding beyond it.
inline void ExpectProduct(const Case& t, const Operands& o,
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

}  // namespace kindling::cpu

#endif  // KINDLING_TESTS_BACKEND_CPU_GEMM_CASES_H_
