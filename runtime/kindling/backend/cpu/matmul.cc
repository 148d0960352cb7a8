// Matrix multiply on the CPU: gemm.h's f32/f64 GEMMs (oneDNN or OpenBLAS),
// a plain i-k-j loop for integers.
//
// Shapes: out [B.., M, N] = lhs [B.., M, K] x rhs [B.., K, N]; the batch dims
// B.. are already broadcast by the front end (zero strides allowed). Each
// matrix operand is passed to BLAS without copying when its strides are
// row-major (unit column stride) or column-major (unit row stride, passed as
// transposed); only other layouts are packed first, and a large transposed
// f32 lhs on a CPU without AVX-512 (PacksTransposedLhs). A batched lhs that is
// contiguous times a broadcast rhs (the Linear-layer case) is one GEMM with
// M' = B * M. Threads: see gemm.h. MatmulBiasKernel adds the bias (and
// applies the ReLU) to each slab of such a GEMM on the thread that computed
// it, while the slab is in cache.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"
#include "kindling/tensor/element_math.h"

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

// kMinPackedTransposedLhs: the fewest elements of a transposed f32 lhs
// that PacksTransposedLhs() copies to row-major (256 KiB).
constexpr int64_t kMinPackedTransposedLhs = int64_t{1} << 16;

// PacksTransposedLhs() is whether an f32 matrix product whose lhs is a
// transposed view (a^T b, a Linear layer's weight gradient) copies that lhs
// to row-major first (PackTransposedLhs), so that the GEMM reads a plain
// matrix: on a CPU without AVX-512, for a large lhs summed over a short k.
// Inside a training step the lhs, the layer's input, was last read in the
// forward pass and is no longer in cache, and the library's packing of
// transposed slabs reads it far below its rate. The quickstart MLP's
// first-layer weight gradient (784 x 256 over a batch of 128) took 622-652 ms
// of a train_bench epoch as a^T b and 379-420 ms copied first, the example
// CNN's first Linear's (3136 x 128) 1270-1333 against 954-971 ms (AMD Zen 1,
// 2 threads, alternating epochs, a timer around each product; three and two
// pairs). With every operand in cache (BM_MlpEpochProducts, three pairs) the
// copy costs little: 390-428 against 362-419 ms. The MLP's hidden layers
// (256 x 256, a 128 KiB lhs) showed no clear gain copied (255-283 against
// 265-300 ms), hence the size floor. Long sums (IsLongWeightGradient, the
// char-LM's) keep their measured path, and so do CPUs with AVX-512, where
// this was not measured. Other transposed operands of that size (a
// composed convolution's turned weights) are copied too; only weight
// gradients were timed. The rule depends on the shape alone, so the bits
// do not depend on the thread count.
bool PacksTransposedLhs(const TensorBase& out, CBLAS_TRANSPOSE ta,
                        CBLAS_TRANSPOSE tb, int64_t m, int64_t k,
                        int64_t leading) {
  // omatcopy takes 32-bit sizes.
  constexpr int64_t kMaxBlasInt = std::numeric_limits<int>::max();
  return out.dtype() == DType::kF32 && out.rank() == 2 && ta == CblasTrans &&
         tb == CblasNoTrans && m * k >= kMinPackedTransposedLhs &&
         !IsLongWeightGradient(ta, tb, k) && !HasAvx512() && m <= kMaxBlasInt &&
         leading <= kMaxBlasInt;
}

// PackTransposedLhs() is the row-major [m, k] copy of the f32 matrix whose
// transpose is stored at `lhs` with leading dimension `leading` (a k x m
// matrix), through OpenBLAS's omatcopy, a slab of rows per thread: for the
// MLP's [128, 784] input it took 22-33 us on one thread where Contiguous()'s
// strided copy took 96-105 us on two.
TensorBase PackTransposedLhs(const TensorBase& lhs, int64_t m, int64_t k,
                             int64_t leading) {
  UseSingleThreadedBlas();
  TensorBase packed =
      TensorBase::Empty(Shape({m, k}), DType::kF32, lhs.device());
  const float* source = lhs.data_as<const float>();
  float* rows = packed.data_as<float>();
  const int64_t slabs =
      std::max<int64_t>(1, std::min<int64_t>(MaxThreads(), m / kSlabAlign));
  ParallelSlabs(slabs, [&](int64_t slab) {
    const auto [begin, end] = GemmSlab(m, slabs, slab);
    if (begin >= end) return;
    cblas_somatcopy(CblasRowMajor, CblasTrans, k, end - begin, 1.0f,
                    source + begin, leading, rows + begin * k, k);
  });
  return packed;
}

// MatmulOperands: one product's operands as BLAS takes them.
struct MatmulOperands {
  MatmulOperands(const TensorBase& out, const TensorBase& lhs_in,
                 const TensorBase& rhs_in)
      : rank(out.rank()),
        m(out.shape()[rank - 2]),
        n(out.shape()[rank - 1]),
        k(lhs_in.shape()[rank - 1]),
        lhs(lhs_in),
        rhs(rhs_in) {
    a = DescribeMatrix(m, k, lhs.strides()[rank - 2], lhs.strides()[rank - 1]);
    b = DescribeMatrix(k, n, rhs.strides()[rank - 2], rhs.strides()[rank - 1]);
    if (!b.usable) {
      rhs = rhs.Contiguous();
      b = DescribeMatrix(k, n, n, 1);
    }
    // (An unusable lhs is described as not transposed: never packed here.)
    if (PacksTransposedLhs(out, a.transpose, b.transpose, m, k, a.leading)) {
      lhs = PackTransposedLhs(lhs, m, k, a.leading);
      a = DescribeMatrix(m, k, k, 1);
    } else if (!a.usable) {
      lhs = lhs.Contiguous();
      a = DescribeMatrix(m, k, k, 1);
    }
    for (int i = 0; i < rank - 2; ++i) batch *= out.shape()[i];
    // The batch folds into M when lhs is one contiguous [B*M, K] block and
    // rhs is the same matrix for every batch entry.
    bool rhs_shared = true;
    for (int i = 0; i < rank - 2; ++i) {
      rhs_shared &= rhs.strides()[i] == 0 || out.shape()[i] == 1;
    }
    folds = batch > 1 && rhs_shared && lhs.is_contiguous();
  }

  // OneGemm() is true when a single GEMM computes the whole product.
  bool OneGemm() const { return batch == 1 || folds; }

  int rank;
  int64_t m, n, k;
  TensorBase lhs, rhs;  // contiguous copies where BLAS cannot read a view
  BlasMatrix a, b;
  int64_t batch = 1;
  bool folds = false;
};

// RunOneGemm() computes the product of `x` (REQUIRES: x.OneGemm()) into
// `c`, calling epilogue on each slab (gemm.h).
template <class T, class Epilogue = NoEpilogue>
void RunOneGemm(const MatmulOperands& x, T* c, const Epilogue& epilogue = {}) {
  const T* a_data = x.lhs.data_as<const T>();
  const T* b_data = x.rhs.data_as<const T>();
  if (x.folds) {
    ParallelGemm<T>(CblasNoTrans, x.b.transpose, x.batch * x.m, x.n, x.k,
                    a_data, x.k, b_data, x.b.leading, c, x.n,
                    GemmAccumulate::kOverwrite, epilogue);
  } else {
    ParallelGemm<T>(x.a.transpose, x.b.transpose, x.m, x.n, x.k, a_data,
                    x.a.leading, b_data, x.b.leading, c, x.n,
                    GemmAccumulate::kOverwrite, epilogue);
  }
}

template <class T>
void MatmulTyped(const TensorBase& out, const TensorBase& lhs_in,
                 const TensorBase& rhs_in) {
  const MatmulOperands x(out, lhs_in, rhs_in);
  T* c_data = out.data_as<T>();
  if (x.OneGemm()) {
    RunOneGemm<T>(x, c_data);
    return;
  }
  const T* a_data = x.lhs.data_as<const T>();
  const T* b_data = x.rhs.data_as<const T>();
  const int batch_rank = x.rank - 2;
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t entry = 0; entry < x.batch; ++entry) {
    int64_t a_offset = 0, b_offset = 0;
    for (int i = 0; i < batch_rank; ++i) {
      a_offset += index[i] * x.lhs.strides()[i];
      b_offset += index[i] * x.rhs.strides()[i];
    }
    ParallelGemm<T>(x.a.transpose, x.b.transpose, x.m, x.n, x.k,
                    a_data + a_offset, x.a.leading, b_data + b_offset,
                    x.b.leading, c_data + entry * x.m * x.n, x.n);
    for (int i = batch_rank - 1; i >= 0; --i) {
      if (++index[i] < out.shape()[i]) break;
      index[i] = 0;
    }
  }
}

// BiasEpilogue: adds bias[j] to each entry of column j of a block of c [.,
// ldc], then applies the activation: the values of Binary(kAdd) and
// Unary(kRelu) on the block, bit for bit.
template <class T>
struct BiasEpilogue {
  void operator()(int64_t row_begin, int64_t row_end, int64_t col_begin,
                  int64_t col_end) const {
    for (int64_t i = row_begin; i < row_end; ++i) {
      T* row = c + i * ldc;
      if (relu) {
        for (int64_t j = col_begin; j < col_end; ++j) {
          row[j] = element_math::Relu<T>(row[j] + bias[j]);
        }
      } else {
        for (int64_t j = col_begin; j < col_end; ++j) row[j] += bias[j];
      }
    }
  }

  T* c;
  int64_t ldc;
  const T* bias;
  bool relu;
};

}  // namespace

void MatmulKernel(const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs) {
  UseSingleThreadedBlas();
  DispatchDType<kArithmeticDTypes>(lhs.dtype(), "cpu matmul", [&]<class T>() {
    MatmulTyped<T>(out, lhs, rhs);
  });
}

bool MatmulBiasKernel(const TensorBase& out, const TensorBase& lhs,
                      const TensorBase& rhs, const TensorBase& bias,
                      ProductActivation activation) {
  const DType dtype = out.dtype();
  if ((dtype != DType::kF32 && dtype != DType::kF64) || out.numel() == 0 ||
      lhs.dtype() != dtype || rhs.dtype() != dtype || bias.dtype() != dtype ||
      !out.is_contiguous() || bias.rank() != 1 ||
      bias.shape()[0] != out.shape()[out.rank() - 1] ||
      (bias.shape()[0] > 1 && bias.strides()[0] != 1)) {
    return false;
  }
  const MatmulOperands x(out, lhs, rhs);
  if (!x.OneGemm() || x.k == 0) return false;
  UseSingleThreadedBlas();
  const bool relu = activation == ProductActivation::kRelu;
  if (dtype == DType::kF32) {
    float* c = out.data_as<float>();
    RunOneGemm<float>(x, c,
                      BiasEpilogue<float>{c, x.n, bias.data_as<float>(), relu});
  } else {
    double* c = out.data_as<double>();
    RunOneGemm<double>(
        x, c, BiasEpilogue<double>{c, x.n, bias.data_as<double>(), relu});
  }
  return true;
}

}  // namespace kindling::cpu
