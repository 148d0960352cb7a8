// The backward of a fully connected layer's bias and ReLU on the CPU
// (Backend::ReluBiasBackward): one pass that masks the incoming gradient
// where the layer's output is not positive and sums the masked columns for
// the bias, where the composed ops take two (the mask, then the sum reading
// its result back), each on one thread below kElementGrain.
//
// The values are the composed ops', bit for bit: the mask keeps a lane's
// gradient unless the output is <= 0 (a NaN output keeps it, as
// element_math::ReluBackward does), and the sums are SumColumnsOf()'s, the
// order Reduce's column sums use.
//
// Only at most kElementGrain elements in rows of at most kMaxColumns. There
// the composed ops each run on one thread and this pass on all of them; it
// took 0.53-0.78x their time at the MLP's [128, 256], 0.58-0.78x at
// [256, 256], 0.68-0.80x at [128, 128] and 0.76x at [32, 256]
// (benches/tensor_bench.cc's BM_ReluBiasBackward, Zen 1, two runs of
// medians of 3). The pass walks 32 columns down all rows, as Reduce's
// column sums do, with two loads and a store a row, each a row's stride
// apart: on rows of 4 KiB ([64, 1024]) it took 0.69-1.49x their time, and
// beyond kElementGrain, where the composed ops run in parallel too,
// 0.94-1.31x ([512, 256] and [4096, 256]). A version that streamed each
// task's span of columns along the rows, with its sums in arrays, was no
// faster at [128, 256] (0.77-0.81x) and slower at [4096, 256] (1.87-1.91x).
//
// Library first: oneDNN 2.6's ReLU backward from the output
// (eltwise_backward, eltwise_relu_use_dst_for_bwd) followed by its sum over
// axis 0 (reduction_sum, which on AVX2 takes its ref:any implementation)
// took 368-371 us at [128, 256] on two threads, Zen 1 (a throwaway probe,
// three runs of medians of 2000 calls), against this kernel's 7.9-8.2 us:
// 45x. No GEMM or transcendental is involved, so OpenBLAS, libxsmm and
// SLEEF have nothing to offer here.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/reduce_layout.h"

namespace kindling::cpu {
namespace {

// kMaxColumns: the widest rows the kernel takes (1 KiB of floats).
constexpr int64_t kMaxColumns = 256;

// MaskedColumns: one column block's view of the three [R, N] matrices.
struct MaskedColumns {
  const float* grad;
  const float* out;
  float* grad_product;
  int64_t stride;
};

// MaskAndSumColumns() writes the block's masked rows to grad_product and
// their column sums to grad_bias.
template <bool kFull>
void MaskAndSumColumns(float* grad_bias, const MaskedColumns& x, int64_t rows,
                       int64_t width) {
  const ColumnMasks masks(width);
  const __m256 zero = _mm256_setzero_ps();
  SumColumnsOf<kFull>(
      grad_bias, masks, rows, /*mean=*/false, [&](int64_t r, int k) {
        const int64_t at = r * x.stride;
        const __m256 dead =
            _mm256_cmp_ps(masks.Load<kFull>(x.out + at, k), zero, _CMP_LE_OQ);
        const __m256 kept =
            _mm256_andnot_ps(dead, masks.Load<kFull>(x.grad + at, k));
        masks.Store<kFull>(x.grad_product + at, k, kept);
        return kept;
      });
}

bool IsContiguousF32(const TensorBase& t) {
  return t.dtype() == DType::kF32 && t.is_contiguous();
}

}  // namespace

bool ReluBiasBackwardKernel(const TensorBase& grad_product,
                            const TensorBase& grad_bias, const TensorBase& grad,
                            const TensorBase& out) {
  // N == 1 would take Reduce's row path, whose order differs; R >= 2^31
  // its other column path.
  if (!IsContiguousF32(grad_product) || !IsContiguousF32(grad_bias) ||
      !IsContiguousF32(grad) || !IsContiguousF32(out) || grad.rank() != 2 ||
      out.shape() != grad.shape() || grad_product.shape() != grad.shape() ||
      grad_bias.rank() != 1 || grad_bias.shape()[0] != grad.shape()[1] ||
      grad.shape()[1] < 2 || grad.shape()[1] > kMaxColumns ||
      grad.numel() > kElementGrain || grad.shape()[0] < 1 ||
      grad.shape()[0] >= (int64_t{1} << 31)) {
    return false;
  }
  const Extent extent{1, grad.shape()[0], grad.shape()[1]};
  const MaskedColumns all{grad.data_as<const float>(),
                          out.data_as<const float>(),
                          grad_product.data_as<float>(), extent.inner};
  float* bias = grad_bias.data_as<float>();
  // Each element is read twice and written once, as in a binary op, with
  // the sums alongside: the MLP's [128, 256] goes to both threads.
  const int64_t grain =
      std::max<int64_t>(1, kHeavyElementGrain / (extent.n * kColumnBlock));
  ForEachColumnBlock(extent, kColumnBlock, grain, all.grad,
                     [&](const ColumnBlock& block, int64_t column) {
                       const MaskedColumns x{
                           all.grad + column, all.out + column,
                           all.grad_product + column, all.stride};
                       WithFullness(block, kColumnBlock, [&](auto full) {
                         MaskAndSumColumns<decltype(full)::value>(
                             bias + column, x, block.n, block.width);
                       });
                     });
  return true;
}

}  // namespace kindling::cpu
