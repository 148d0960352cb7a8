// Integer matmul on CUDA (i64, i32, u8; cuBLAS has no such GEMM): one
// thread per output element, wrapping arithmetic like the CPU backend, the
// operands read through their strides (a batch indexer for the batch dims).
// Integer products are rare (index arithmetic, tests), so this is simple
// rather than fast.
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"

namespace kindling::cuda {
namespace {

// MatrixStrides: element strides of one matrix operand's last two dims.
struct MatrixStrides {
  int64_t row;
  int64_t col;
};

template <class T>
__global__ void IntegerMatmul(StridedIndexer<2> batches, const T* lhs,
                              MatrixStrides a, const T* rhs, MatrixStrides b,
                              T* out, int64_t m, int64_t n, int64_t k) {
  using U = std::make_unsigned_t<T>;
  const int64_t total = batches.numel * m * n;
  for (int64_t flat = GlobalThread(); flat < total; flat += GridThreads()) {
    const int64_t j = flat % n;
    const int64_t i = (flat / n) % m;
    int64_t offset[2];
    batches.Offsets(flat / (m * n), offset);
    const T* a_row = lhs + offset[0] + i * a.row;
    const T* b_col = rhs + offset[1] + j * b.col;
    U sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      sum = static_cast<U>(sum + static_cast<U>(a_row[p * a.col]) *
                                     static_cast<U>(b_col[p * b.row]));
    }
    out[flat] = static_cast<T>(sum);
  }
}

}  // namespace

void IntegerMatmulKernel(cudaStream_t stream, const TensorBase& out,
                         const TensorBase& lhs, const TensorBase& rhs) {
  const int rank = out.rank();
  const int batch_rank = rank - 2;
  const int64_t m = out.shape()[rank - 2];
  const int64_t n = out.shape()[rank - 1];
  const int64_t k = lhs.shape()[rank - 1];
  if (out.numel() == 0) return;
  int64_t dims[kMaxCudaRank];
  int64_t lhs_strides[kMaxCudaRank];
  int64_t rhs_strides[kMaxCudaRank];
  KINDLING_CHECK(rank <= kMaxCudaRank, "cuda matmul: rank %d above %d", rank,
                 kMaxCudaRank);
  for (int i = 0; i < batch_rank; ++i) {
    dims[i] = out.shape()[i];
    lhs_strides[i] = lhs.strides()[i];
    rhs_strides[i] = rhs.strides()[i];
  }
  const int64_t* strides[2] = {lhs_strides, rhs_strides};
  const StridedIndexer<2> batches =
      MakeStridedIndexer<2>(batch_rank, dims, strides);
  const MatrixStrides a{lhs.strides()[rank - 2], lhs.strides()[rank - 1]};
  const MatrixStrides b{rhs.strides()[rank - 2], rhs.strides()[rank - 1]};
  const LaunchGrid grid = GridFor(out.numel());
  auto launch = [&]<class T>() {
    IntegerMatmul<T>
        <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(
            batches, lhs.data_as<const T>(), a, rhs.data_as<const T>(), b,
            out.data_as<T>(), m, n, k);
    KINDLING_CUDA_CHECK_LAUNCH("IntegerMatmul");
  };
  DispatchDType<kIntegerDTypes>(lhs.dtype(), "cuda integer matmul", launch);
}

}  // namespace kindling::cuda
