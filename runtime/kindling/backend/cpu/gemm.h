// Gemm and ParallelGemm: c = op(a) x op(b) (or c += ...) on row-major
// matrices, through oneDNN's matmul for the f32 shapes where it measured
// faster (onednn_gemm.h), OpenBLAS for the other f32 and f64 ones, and a
// plain i-k-j loop for integers; shared by Matmul, Conv2d and the fused
// attention.
//
// Threads. OpenBLAS runs single-threaded and a GEMM big enough to be worth
// it is cut into one slab of rows (or columns) per thread of the kernels' pool
// (parallel.h), each a single-threaded sgemm. One pool of threads then serves
// every kernel: Debian's OpenBLAS is the pthreads build, whose workers spin
// (sched_yield) between calls while OpenMP's workers spin between parallel
// regions, and on a machine with as many cores as threads the two pools took
// each other's cores (a profiled MLP epoch spent more time in the two runtimes'
// wait loops than in sgemm).
#ifndef KINDLING_BACKEND_CPU_GEMM_H_
#define KINDLING_BACKEND_CPU_GEMM_H_

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include "kindling/backend/cpu/onednn_gemm.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"

namespace kindling::cpu {

// GemmAccumulate: whether a GEMM overwrites c or adds its product to it.
enum class GemmAccumulate { kOverwrite, kAdd };

// IsLongWeightGradient() is whether a product is a weight gradient summed
// over many rows: a^T b over k >= 1024 (the char-LM's, over its 4096
// tokens; the MLP's, over a batch of 128, are not).
inline bool IsLongWeightGradient(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
                                 int64_t k) {
  return ta == CblasTrans && tb == CblasNoTrans && k >= 1024;
}

// OpenBlasWinsLongWeightGradients() is whether this CPU is one where
// OpenBLAS measured faster than oneDNN on those products: AMD's Zen 3
// (family 25, AVX2 only), where oneDNN's AVX2 sgemm took, per slab,
// 1.02-1.45x OpenBLAS's time on the char-LM's weight gradients (128 x 128,
// 128 x 512, 512 x 128 and 128 x 256, summed over 4096 tokens;
// benches/gemm_bench, 2 threads, five runs of medians of 3) and a char-LM
// step 0.91x the time. Not on Zen 1 (family 23), where OpenBLAS's kernel
// ran the char-LM's weight gradients at a third of its own rate inside a
// training step (10.5-11.8 GFLOP/s a thread, against 30-37 in a process
// where a product with a wider output had run before them, and oneDNN's
// 35-39 either way), and a char-LM step took 1.52-1.56x the time with them
// (two alternating pairs of runs); nor with AVX-512, where oneDNN's kernels
// were the faster ones on such shapes (0.76-0.78x, onednn_gemm.h). CPUs not
// measured keep the library default, oneDNN. The rule depends on the CPU
// alone, so a machine rounds a product the same way every run.
inline bool OpenBlasWinsLongWeightGradients() {
  // GCC 12's libgcc may name a Zen 4 "znver3" too; it has AVX-512, where
  // oneDNN is the faster library, hence the second test.
  static const bool zen3 = __builtin_cpu_is("znver3") != 0;
  return zen3 && !HasAvx512();
}

// OpenBlasIsFaster() is whether an f32 product's shape goes to OpenBLAS
// rather than oneDNN: a long weight gradient on a CPU where OpenBLAS wins
// them.
inline bool OpenBlasIsFaster(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
                             int64_t k) {
  return IsLongWeightGradient(ta, tb, k) && OpenBlasWinsLongWeightGradients();
}

// Gemm(): c [m, n] = op(a) [m, k] x op(b) [k, n] (kOverwrite) or c += that
// (kAdd), single-threaded.
template <class T>
void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
          int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc, GemmAccumulate accumulate = GemmAccumulate::kOverwrite) {
  const bool add = accumulate == GemmAccumulate::kAdd;
  if constexpr (std::is_same_v<T, float>) {
    // oneDNN's matmul where it measured faster (the rules and figures are
    // in onednn_gemm.h), except OpenBlasIsFaster()'s shapes.
    if (!OpenBlasIsFaster(ta, tb, k) &&
        OneDnnSgemm(ta == CblasTrans, tb == CblasTrans, m, n, k, a, lda, b, ldb,
                    c, ldc, add)) {
      return;
    }
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb,
                add ? 1.0f : 0.0f, c, ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb,
                add ? 1.0 : 0.0, c, ldc);
  } else {
    // Integers: c [m, n] = a [m, k] x b [k, n], wrapping arithmetic.
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < m; ++i) {
      U* c_row = reinterpret_cast<U*>(c + i * ldc);
      if (!add) {
        for (int64_t j = 0; j < n; ++j) c_row[j] = 0;
      }
      for (int64_t p = 0; p < k; ++p) {
        const U a_ip = static_cast<U>(ta == CblasNoTrans ? a[i * lda + p]
                                                         : a[p * lda + i]);
        for (int64_t j = 0; j < n; ++j) {
          const U b_pj = static_cast<U>(tb == CblasNoTrans ? b[p * ldb + j]
                                                           : b[j * ldb + p]);
          c_row[j] += a_ip * b_pj;
        }
      }
    }
  }
}

// kParallelGemmWork is the fewest multiply-adds (m * n * k) a GEMM needs
// before it is split across threads: below it, about 20 us of work on one
// core, the fork/join and the packing each slab repeats cost more than the
// second core saves.
constexpr int64_t kParallelGemmWork = int64_t{1} << 18;

// Slabs are multiples of the sgemm micro-kernel's tile (16 x 8 on AVX2 /
// AVX-512 builds covers both), so no thread ends up with a ragged edge tile
// the other also has.
constexpr int64_t kSlabAlign = 16;

// Leaves OpenBLAS's own thread pool idle: GEMMs are split across the kernels'
// pool threads instead (see the top of this file). Once per process.
inline void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// GemmSlab() is the range [begin, end) of rows (or columns) that slab
// `slab` of `slabs` takes of `extent`, cut at multiples of kSlabAlign.
inline std::pair<int64_t, int64_t> GemmSlab(int64_t extent, int64_t slabs,
                                            int64_t slab) {
  const int64_t tiles = (extent + kSlabAlign - 1) / kSlabAlign;
  return {std::min(extent, tiles * slab / slabs * kSlabAlign),
          std::min(extent, tiles * (slab + 1) / slabs * kSlabAlign)};
}

// NoEpilogue: ParallelGemm's default epilogue, which does nothing.
struct NoEpilogue {
  void operator()(int64_t, int64_t, int64_t, int64_t) const {}
};

// ParallelGemm() is Gemm() cut into one slab of c per thread, each a
// single-threaded BLAS call: slabs of rows when m >= n (every slab then
// re-packs all of op(b), the smaller operand), else slabs of columns. After
// each slab, on the thread that computed it, epilogue(row_begin, row_end,
// col_begin, col_end) may rework that block of c while it is in cache.
template <class T, class Epilogue = NoEpilogue>
void ParallelGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                  int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                  T* c, int64_t ldc,
                  GemmAccumulate accumulate = GemmAccumulate::kOverwrite,
                  const Epilogue& epilogue = {}) {
  const bool blas = std::is_same_v<T, float> || std::is_same_v<T, double>;
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  int64_t slabs = blas && m * n * k >= kParallelGemmWork ? MaxThreads() : 1;
  slabs = std::min(slabs, extent / kSlabAlign);
  if (slabs <= 1) {
    Gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    epilogue(0, m, 0, n);
    return;
  }
  ParallelSlabs(slabs, [&](int64_t slab) {
    const auto [begin, end] = GemmSlab(extent, slabs, slab);
    if (begin >= end) return;
    if (split_rows) {
      // Rows [begin, end) of op(a) and of c.
      const T* a_rows = ta == CblasNoTrans ? a + begin * lda : a + begin;
      Gemm<T>(ta, tb, end - begin, n, k, a_rows, lda, b, ldb, c + begin * ldc,
              ldc, accumulate);
      epilogue(begin, end, 0, n);
    } else {
      // Columns [begin, end) of op(b) and of c.
      const T* b_cols = tb == CblasNoTrans ? b + begin : b + begin * ldb;
      Gemm<T>(ta, tb, m, end - begin, k, a, lda, b_cols, ldb, c + begin, ldc,
              accumulate);
      epilogue(0, m, begin, end);
    }
  });
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_GEMM_H_
