// TileProduct: the fused attention's tile products on the CPU (nn/cpu's
// fused_attention_cpu.cc), c = op(a) op(b) or c += that, row-major with
// cblas_sgemm's leading dimensions, as cpu::Gemm computes them, with a bound
// that names the part of the product causal attention needs.
//
// Why not cpu::Gemm alone. The attention's products are small (a tile of 64
// queries, a head dimension of 32), and a library's fixed cost per call and
// its packing for a general shape took a large share of each. On the char
// LM's tiles, one thread (benches/gemm_bench --benchmark_filter=
// AttentionTile, AMD EPYC with AVX-512, medians of 3), the panels below took
// 0.53x the time of the library gemm.h picks (oneDNN's sgemm) for q k^T of
// 64 x 64 x 32 (transposing k included), 0.79x at 64 x 128 x 32, 0.80-0.85x
// for p v, dS k, dS^T q and p^T dO (220-247 GFLOP/s against 116-197). And a
// causal tile needs only its lower triangle: the panels skip the rest,
// eight rows at a time.
//
// f32 runs on panels of eight rows by 32 columns where the CPU has AVX-512
// (cpu::HasAvx512()), else on AVX2 panels of six rows by 16 columns. On an
// AVX2-only AMD EPYC (Zen 3), whole tiles, the AVX2 panels took 0.86-1.05x
// the library's time (56-70 GFLOP/s, one thread, medians of 3), and the
// causal bound then halves the diagonal tiles' work, which the library
// computes whole. f64 goes through cpu::Gemm, which computes the whole
// product. Both give the attention the same answer: the bound only ever
// drops terms the caller has made zero, or entries it never reads.
#ifndef KINDLING_NN_CPU_ATTENTION_PRODUCTS_H_
#define KINDLING_NN_CPU_ATTENTION_PRODUCTS_H_

#include <cstdint>

#include "kindling/backend/cpu/gemm.h"

namespace kindling::nn {

// ProductBound: which part of a tile product the attention needs, for row r
// of c (counted from the tile's first row):
//   kAll:          all of it.
//   kColumnsBelow: columns j < r + offset; the other entries of the row may
//                  be left unwritten (a causal tile of scores q k^T or
//                  dO v^T: key j is hidden from a later query).
//   kDepthBelow:   the sum over depth d < r + offset; the caller guarantees
//                  that op(a)(r, d) is zero beyond (p v and dS k: the weights
//                  of hidden keys are zero).
//   kDepthFrom:    the sum over depth d >= r + offset; op(a)(r, d) is zero
//                  before (p^T dO and dS^T q: a key's earlier queries do not
//                  see it).
struct ProductBound {
  enum class Kind { kAll, kColumnsBelow, kDepthBelow, kDepthFrom };
  Kind kind = Kind::kAll;
  int64_t offset = 0;
};

// TileProduct() computes c [m, n] = op(a) [m, k] x op(b) [k, n] (kOverwrite)
// or c += that (kAdd) within `bound`, on the calling thread.
template <class T>
void TileProduct(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc, cpu::GemmAccumulate accumulate,
                 ProductBound bound = {});

// Avx512PanelProductF32() and Avx2PanelProductF32() are TileProduct() for
// f32 on one instruction set's panels whatever the CPU reports (the first
// REQUIRES cpu::HasAvx512()); TileProduct() runs the first where the CPU
// has AVX-512 and the second elsewhere. For tests and benchmarks that
// compare the paths.
void Avx512PanelProductF32(bool transpose_a, bool transpose_b, int64_t m,
                           int64_t n, int64_t k, const float* a, int64_t lda,
                           const float* b, int64_t ldb, float* c, int64_t ldc,
                           cpu::GemmAccumulate accumulate, ProductBound bound);
void Avx2PanelProductF32(bool transpose_a, bool transpose_b, int64_t m,
                         int64_t n, int64_t k, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc,
                         cpu::GemmAccumulate accumulate, ProductBound bound);

}  // namespace kindling::nn

#endif  // KINDLING_NN_CPU_ATTENTION_PRODUCTS_H_
