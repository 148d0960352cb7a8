#include "kindling/nn/cpu/attention_products.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/vector_math.h"

namespace kindling::nn {
namespace {

// PanelOperands: a read as a(r, d) = a[r * row_step + d * depth_step] (so a
// transposed a costs nothing), b as rows of ldb with unit column stride, c
// rows of ldc.
struct PanelOperands {
  const float* a;
  int64_t row_step, depth_step;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
};

// PackTransposed() is b^T [k, n] of b [n, k] (rows ldb apart), packed into
// the calling thread's buffer with rows n apart, by `transpose` on blocks of
// kBlock x kBlock.
template <int kBlock>
const float* PackTransposed(const float* b, int64_t ldb, int64_t n, int64_t k,
                            void (*transpose)(const float*, int64_t, int64_t,
                                              int64_t, float*, int64_t)) {
  thread_local std::vector<float> packed;
  if (packed.size() < static_cast<size_t>(n * k)) packed.resize(n * k);
  float* out = packed.data();
  for (int64_t j = 0; j < n; j += kBlock) {
    for (int64_t d = 0; d < k; d += kBlock) {
      transpose(b + j * ldb + d, ldb, std::min<int64_t>(kBlock, n - j),
                std::min<int64_t>(kBlock, k - d), out + d * n + j, n);
    }
  }
  return out;
}

// --- AVX-512: panels of eight rows by 32 columns ----------------------------
//
// Sixteen accumulators, each multiply-add fed by one broadcast of a and two
// loads of b per depth step shared by the rows.

KINDLING_AVX512_BEGIN

struct Avx512Panels {
  static constexpr int kPanelRows = 8;

  // Columns() computes rows [0, kRows) of c, columns [j, j + 16 kRegs) within
  // [0, n): c = (c +) the sum over depth [d0, d1) of a(r, d) b[d].
  template <int kRows, int kRegs>
  KINDLING_AVX512 static void Columns(const PanelOperands& x, int64_t j,
                                      int64_t n, int64_t d0, int64_t d1,
                                      bool add) {
    __mmask16 lanes[kRegs];
    __m512 acc[kRows][kRegs];
    for (int q = 0; q < kRegs; ++q) {
      lanes[q] = cpu::FirstLanes16(n - j - 16 * q);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      for (int q = 0; q < kRegs; ++q) acc[r][q] = _mm512_setzero_ps();
    }
    const float* b = x.b + j;
    for (int64_t d = d0; d < d1; ++d) {
      __m512 b_d[kRegs];
      for (int q = 0; q < kRegs; ++q) {
        b_d[q] = _mm512_maskz_loadu_ps(lanes[q], b + d * x.ldb + 16 * q);
      }
      const float* a = x.a + d * x.depth_step;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512 a_rd = _mm512_set1_ps(a[r * x.row_step]);
        for (int q = 0; q < kRegs; ++q) {
          acc[r][q] = _mm512_fmadd_ps(a_rd, b_d[q], acc[r][q]);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      float* c = x.c + r * x.ldc + j;
      for (int q = 0; q < kRegs; ++q) {
        if (add) {
          acc[r][q] = _mm512_add_ps(
              acc[r][q], _mm512_maskz_loadu_ps(lanes[q], c + 16 * q));
        }
        _mm512_mask_storeu_ps(c + 16 * q, lanes[q], acc[r][q]);
      }
    }
  }

  // Panel() computes rows [0, kRows) of c, columns [0, n), 32 columns at a
  // time and the last 1-16 with half the registers: a causal panel's columns
  // end anywhere, and a half-empty block would cost a full one.
  template <int kRows>
  KINDLING_AVX512 static void Panel(const PanelOperands& x, int64_t n,
                                    int64_t d0, int64_t d1, bool add) {
    for (int64_t j = 0; j < n; j += 32) {
      if (n - j > 16) {
        Columns<kRows, 2>(x, j, n, d0, d1, add);
      } else {
        Columns<kRows, 1>(x, j, n, d0, d1, add);
      }
    }
  }

  // Transpose16() writes the transpose of a block of `rows` x `cols` floats
  // (both at most 16; rows ldb apart) as `cols` rows of `rows`, ld_out apart:
  // sixteen loads, sixty-four shuffles and sixteen stores for 256 floats, where
  // a scalar loop took a tenth of the attention's time.
  KINDLING_AVX512 static void Transpose16(const float* b, int64_t ldb,
                                          int64_t rows, int64_t cols,
                                          float* out, int64_t ld_out) {
    __m512 r[16], t[16];
    const __mmask16 in_row = cpu::FirstLanes16(cols);
    for (int i = 0; i < 16; ++i) {
      r[i] = i < rows ? _mm512_maskz_loadu_ps(in_row, b + i * ldb)
                      : _mm512_setzero_ps();
    }
    // Pairs of rows interleaved by element, then by pairs of elements, then
    // the 128-bit lanes exchanged twice: r[i] ends as column i.
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      const __m512d t0 = _mm512_castps_pd(t[i]),
                    t1 = _mm512_castps_pd(t[i + 1]);
      const __m512d t2 = _mm512_castps_pd(t[i + 2]);
      const __m512d t3 = _mm512_castps_pd(t[i + 3]);
      r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
      r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
      r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
      r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int h = 0; h < 16; h += 8) {
      for (int i = 0; i < 4; ++i) {
        t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
        t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
      }
    }
    for (int i = 0; i < 8; ++i) {
      r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
      r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
    const __mmask16 out_row = cpu::FirstLanes16(rows);
    for (int i = 0; i < cols; ++i) {
      _mm512_mask_storeu_ps(out + i * ld_out, out_row, r[i]);
    }
  }

  // Transposed() is b^T [k, n] of b [n, k] (rows ldb apart), packed into the
  // calling thread's buffer with rows n apart.
  static const float* Transposed(const float* b, int64_t ldb, int64_t n,
                                 int64_t k) {
    return PackTransposed<16>(b, ldb, n, k, &Transpose16);
  }
};

KINDLING_AVX512_END

// --- AVX2: panels of six rows by 16 columns --------------------------------
//
// Twelve accumulators, two registers of b and a broadcast of a: fifteen of
// AVX2's sixteen registers. The kernels are built for x86-64-v3, so these
// run on every CPU Kindling runs on.

struct Avx2Panels {
  static constexpr int kPanelRows = 6;

  // Columns() computes rows [0, kRows) of c, columns [j, j + 8 kRegs) within
  // [0, n): c = (c +) the sum over depth [d0, d1) of a(r, d) b[d]. kWhole:
  // all 8 kRegs columns are inside [0, n), so no load or store is masked
  // (masked stores are slow on AMD's cores).
  template <int kRows, int kRegs, bool kWhole>
  static void Columns(const PanelOperands& x, int64_t j, int64_t n, int64_t d0,
                      int64_t d1, bool add) {
    __m256i lanes[kRegs];
    __m256 acc[kRows][kRegs];
    for (int q = 0; q < kRegs; ++q) {
      lanes[q] = cpu::TailMask(std::clamp<int64_t>(n - j - 8 * q, 0, 8));
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      for (int q = 0; q < kRegs; ++q) acc[r][q] = _mm256_setzero_ps();
    }
    const float* b = x.b + j;
    for (int64_t d = d0; d < d1; ++d) {
      __m256 b_d[kRegs];
      for (int q = 0; q < kRegs; ++q) {
        const float* b_dq = b + d * x.ldb + 8 * q;
        b_d[q] =
            kWhole ? _mm256_loadu_ps(b_dq) : _mm256_maskload_ps(b_dq, lanes[q]);
      }
      const float* a = x.a + d * x.depth_step;
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m256 a_rd = _mm256_broadcast_ss(a + r * x.row_step);
        for (int q = 0; q < kRegs; ++q) {
          acc[r][q] = _mm256_fmadd_ps(a_rd, b_d[q], acc[r][q]);
        }
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      float* c = x.c + r * x.ldc + j;
      for (int q = 0; q < kRegs; ++q) {
        float* c_q = c + 8 * q;
        if (kWhole) {
          if (add) acc[r][q] = _mm256_add_ps(acc[r][q], _mm256_loadu_ps(c_q));
          _mm256_storeu_ps(c_q, acc[r][q]);
        } else {
          if (add) {
            acc[r][q] =
                _mm256_add_ps(acc[r][q], _mm256_maskload_ps(c_q, lanes[q]));
          }
          _mm256_maskstore_ps(c_q, lanes[q], acc[r][q]);
        }
      }
    }
  }

  // Panel() computes rows [0, kRows) of c, columns [0, n), 16 columns at a
  // time and the last 1-8 with one register.
  template <int kRows>
  static void Panel(const PanelOperands& x, int64_t n, int64_t d0, int64_t d1,
                    bool add) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) Columns<kRows, 2, true>(x, j, n, d0, d1, add);
    if (n - j > 8) {
      Columns<kRows, 2, false>(x, j, n, d0, d1, add);
    } else if (n - j == 8) {
      Columns<kRows, 1, true>(x, j, n, d0, d1, add);
    } else if (n > j) {
      Columns<kRows, 1, false>(x, j, n, d0, d1, add);
    }
  }

  // Transpose8() writes the transpose of a block of `rows` x `cols` floats
  // (both at most 8; rows ldb apart) as `cols` rows of `rows`, ld_out apart.
  static void Transpose8(const float* b, int64_t ldb, int64_t rows,
                         int64_t cols, float* out, int64_t ld_out) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; ++i) {
      r[i] = i < rows ? cpu::LoadPartial(b + i * ldb, cols, 0.0f)
                      : _mm256_setzero_ps();
    }
    // Pairs of rows interleaved by element, then by pairs of elements, then
    // the 128-bit halves exchanged: r[i] ends as column i.
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
      r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
      t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
    }
    for (int i = 0; i < cols; ++i) {
      if (rows == 8) {
        _mm256_storeu_ps(out + i * ld_out, t[i]);
      } else {
        cpu::StorePartial(out + i * ld_out, rows, t[i]);
      }
    }
  }

  // Transposed() is b^T [k, n] of b [n, k] (rows ldb apart), packed into the
  // calling thread's buffer with rows n apart.
  static const float* Transposed(const float* b, int64_t ldb, int64_t n,
                                 int64_t k) {
    return PackTransposed<8>(b, ldb, n, k, &Transpose8);
  }
};

// PanelOfRows() is Panels::Panel<rows>() for `rows` in [1, kRows].
template <class Panels, int kRows = Panels::kPanelRows>
void PanelOfRows(int rows, const PanelOperands& x, int64_t n, int64_t d0,
                 int64_t d1, bool add) {
  if constexpr (kRows > 1) {
    if (rows < kRows) {
      return PanelOfRows<Panels, kRows - 1>(rows, x, n, d0, d1, add);
    }
  }
  Panels::template Panel<kRows>(x, n, d0, d1, add);
}

// PanelProduct() is TileProduct() for f32 on one instruction set's panels.
template <class Panels>
void PanelProduct(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                  int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc,
                  cpu::GemmAccumulate accumulate, ProductBound bound) {
  constexpr int kPanelRows = Panels::kPanelRows;
  using Kind = ProductBound::Kind;
  // Columns past every row's bound are never needed: not packed either.
  const int64_t columns = bound.kind == Kind::kColumnsBelow
                              ? std::clamp<int64_t>(m - 1 + bound.offset, 0, n)
                              : n;
  if (columns == 0 || m == 0) return;
  if (transpose_b) {
    b = Panels::Transposed(b, ldb, columns, k);
    ldb = columns;
  }
  const bool add = accumulate == cpu::GemmAccumulate::kAdd;
  for (int64_t i = 0; i < m; i += kPanelRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, m - i));
    // The panel's last row reaches furthest below; its first starts earliest.
    int64_t panel_columns = columns, d0 = 0, d1 = k;
    switch (bound.kind) {
      case Kind::kAll:
        break;
      case Kind::kColumnsBelow:
        panel_columns =
            std::clamp<int64_t>(i + rows - 1 + bound.offset, 0, columns);
        break;
      case Kind::kDepthBelow:
        d1 = std::clamp<int64_t>(i + rows - 1 + bound.offset, 0, k);
        break;
      case Kind::kDepthFrom:
        d0 = std::clamp<int64_t>(i + bound.offset, 0, k);
        break;
    }
    if (panel_columns == 0 || (add && d0 >= d1)) continue;
    const PanelOperands x{transpose_a ? a + i : a + i * lda,
                          transpose_a ? 1 : lda,
                          transpose_a ? lda : 1,
                          b,
                          ldb,
                          c + i * ldc,
                          ldc};
    PanelOfRows<Panels>(rows, x, panel_columns, d0, d1, add);
  }
}

}  // namespace

void Avx512PanelProductF32(bool transpose_a, bool transpose_b, int64_t m,
                           int64_t n, int64_t k, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float* c, int64_t ldc,
                           cpu::GemmAccumulate accumulate, ProductBound bound) {
  PanelProduct<Avx512Panels>(transpose_a, transpose_b, m, n, k, a, lda, b, ldb,
                             c, ldc, accumulate, bound);
}

void Avx2PanelProductF32(bool transpose_a, bool transpose_b, int64_t m,
                         int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc,
                         cpu::GemmAccumulate accumulate, ProductBound bound) {
  PanelProduct<Avx2Panels>(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c,
                           ldc, accumulate, bound);
}

template <class T>
void TileProduct(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc, cpu::GemmAccumulate accumulate,
                 ProductBound bound) {
  if constexpr (std::is_same_v<T, float>) {
    (cpu::HasAvx512() ? &Avx512PanelProductF32 : &Avx2PanelProductF32)(
        transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate,
        bound);
  } else {
    cpu::Gemm<T>(transpose_a ? CblasTrans : CblasNoTrans,
                 transpose_b ? CblasTrans : CblasNoTrans, m, n, k, a, lda, b,
                 ldb, c, ldc, accumulate);
  }
}

template void TileProduct<float>(bool, bool, int64_t, int64_t, int64_t,
                                 const float*, int64_t, const float*, int64_t,
                                 float*, int64_t, cpu::GemmAccumulate,
                                 ProductBound);
template void TileProduct<double>(bool, bool, int64_t, int64_t, int64_t,
                                  const double*, int64_t, const double*,
                                  int64_t, double*, int64_t,
                                  cpu::GemmAccumulate, ProductBound);

}  // namespace kindling::nn
