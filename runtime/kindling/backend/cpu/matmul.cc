// Matrix multiply on the CPU: OpenBLAS sgemm/dgemm for f32/f64, a plain
// i-k-j loop for integers.
//
// Shapes: out [B.., M, N] = lhs [B.., M, K] x rhs [B.., K, N]; the batch dims
// B.. are already broadcast by the front end (zero strides allowed). Each
// matrix operand is passed to BLAS without copying when its strides are
// row-major (unit column stride) or column-major (unit row stride, passed as
// transposed); only other layouts are packed first. A batched lhs that is
// contiguous times a broadcast rhs (the Linear-layer case) is one GEMM with
// M' = B * M.
//
// Threads. OpenBLAS runs single-threaded and a GEMM big enough to be worth
// it is cut into one slab of rows (or columns) per thread of the kernels' pool
// (parallel.h), each a single-threaded sgemm. One pool of threads then serves
// every kernel: Debian's OpenBLAS is the pthreads build, whose workers spin
// (sched_yield) between calls while OpenMP's workers spin between parallel
// regions, and on a machine with as many cores as threads the two pools took
// each other's cores (a profiled MLP epoch spent more time in the two runtimes'
// wait loops than in sgemm).
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// How one matrix operand is handed to BLAS.
struct BlasMatrix {
  CBLAS_TRANSPOSE transpose = CblasNoTrans;
  int64_t leading = 1;
  bool usable = false;
};

// Describes a rows x cols matrix with element strides (row_stride,
// col_stride) in row-major BLAS terms.
BlasMatrix DescribeMatrix(int64_t rows, int64_t cols, int64_t row_stride,
                          int64_t col_stride) {
  BlasMatrix matrix;
  if ((cols == 1 || col_stride == 1) &&
      (rows == 1 || row_stride >= std::max<int64_t>(cols, 1))) {
    matrix.transpose = CblasNoTrans;
    matrix.leading = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
    matrix.usable = true;
  } else if ((rows == 1 || row_stride == 1) &&
             (cols == 1 || col_stride >= std::max<int64_t>(rows, 1))) {
    matrix.transpose = CblasTrans;
    matrix.leading = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
    matrix.usable = true;
  }
  return matrix;
}

template <class T>
void Gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
          int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c,
                ldc);
  } else {
    // Integers: c [m, n] = a [m, k] x b [k, n], wrapping arithmetic.
    using U = std::make_unsigned_t<T>;
    for (int64_t i = 0; i < m; ++i) {
      U* c_row = reinterpret_cast<U*>(c + i * ldc);
      for (int64_t j = 0; j < n; ++j) c_row[j] = 0;
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
void UseSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// ParallelGemm() is Gemm() cut into one slab of c per thread, each a
// single-threaded BLAS call: slabs of rows when m >= n (every slab then
// re-packs all of op(b), the smaller operand), else slabs of columns.
template <class T>
void ParallelGemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                  int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                  T* c, int64_t ldc) {
  const bool blas = std::is_same_v<T, float> || std::is_same_v<T, double>;
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  int64_t slabs = blas && m * n * k >= kParallelGemmWork ? MaxThreads() : 1;
  slabs = std::min(slabs, extent / kSlabAlign);
  if (slabs <= 1) {
    Gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  ParallelSlabs(slabs, [&](int64_t slab) {
    const int64_t tiles = (extent + kSlabAlign - 1) / kSlabAlign;
    const int64_t begin = std::min(extent, tiles * slab / slabs * kSlabAlign);
    const int64_t end =
        std::min(extent, tiles * (slab + 1) / slabs * kSlabAlign);
    if (begin >= end) return;
    if (split_rows) {
      // Rows [begin, end) of op(a) and of c.
      const T* a_rows = ta == CblasNoTrans ? a + begin * lda : a + begin;
      Gemm<T>(ta, tb, end - begin, n, k, a_rows, lda, b, ldb, c + begin * ldc,
              ldc);
    } else {
      // Columns [begin, end) of op(b) and of c.
      const T* b_cols = tb == CblasNoTrans ? b + begin : b + begin * ldb;
      Gemm<T>(ta, tb, m, end - begin, k, a, lda, b_cols, ldb, c + begin, ldc);
    }
  });
}

template <class T>
void MatmulTyped(const TensorBase& out, const TensorBase& lhs_in,
                 const TensorBase& rhs_in) {
  const int rank = out.rank();
  const int64_t m = out.shape()[rank - 2];
  const int64_t n = out.shape()[rank - 1];
  const int64_t k = lhs_in.shape()[rank - 1];
  TensorBase lhs = lhs_in;
  TensorBase rhs = rhs_in;
  BlasMatrix a =
      DescribeMatrix(m, k, lhs.strides()[rank - 2], lhs.strides()[rank - 1]);
  BlasMatrix b =
      DescribeMatrix(k, n, rhs.strides()[rank - 2], rhs.strides()[rank - 1]);
  if (!a.usable) {
    lhs = lhs.Contiguous();
    a = DescribeMatrix(m, k, k, 1);
  }
  if (!b.usable) {
    rhs = rhs.Contiguous();
    b = DescribeMatrix(k, n, n, 1);
  }
  const T* a_data = lhs.data_as<const T>();
  const T* b_data = rhs.data_as<const T>();
  T* c_data = out.data_as<T>();
  const int batch_rank = rank - 2;
  int64_t batch = 1;
  for (int i = 0; i < batch_rank; ++i) batch *= out.shape()[i];

  // Fold the batch into M when lhs is one contiguous [B*M, K] block and rhs
  // is the same matrix for every batch entry.
  bool rhs_shared = true;
  for (int i = 0; i < batch_rank; ++i) {
    rhs_shared &= rhs.strides()[i] == 0 || out.shape()[i] == 1;
  }
  if (batch > 1 && rhs_shared && lhs.is_contiguous()) {
    ParallelGemm<T>(CblasNoTrans, b.transpose, batch * m, n, k, a_data, k,
                    b_data, b.leading, c_data, n);
    return;
  }
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t entry = 0; entry < batch; ++entry) {
    int64_t a_offset = 0, b_offset = 0;
    for (int i = 0; i < batch_rank; ++i) {
      a_offset += index[i] * lhs.strides()[i];
      b_offset += index[i] * rhs.strides()[i];
    }
    ParallelGemm<T>(a.transpose, b.transpose, m, n, k, a_data + a_offset,
                    a.leading, b_data + b_offset, b.leading,
                    c_data + entry * m * n, n);
    for (int i = batch_rank - 1; i >= 0; --i) {
      if (++index[i] < out.shape()[i]) break;
      index[i] = 0;
    }
  }
}

}  // namespace

void MatmulKernel(const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs) {
  UseSingleThreadedBlas();
  DispatchArithmetic(lhs.dtype(), "matmul",
                     [&]<class T>() { MatmulTyped<T>(out, lhs, rhs); });
}

}  // namespace kindling::cpu
