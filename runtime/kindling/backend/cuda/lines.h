// Lines along one axis, for the CUDA reductions and softmax.
//
// A reduction or softmax along `axis` works on lines: for each position of
// the other axes, the `n` elements along `axis`. LineIndexer() gives each
// line's start offset in the (any-strided) input and in the contiguous
// output; element k of a line is at start + k * axis stride. Kernels either
// give a line to a whole block (BlockAllReduce, block_reduce.h, combines the
// threads' partial states) or, when lines are many and the axis is not
// the input's unit-stride one, a line to each thread so that neighbouring
// threads read neighbouring columns.
#ifndef KINDLING_BACKEND_CUDA_LINES_H_
#define KINDLING_BACKEND_CUDA_LINES_H_

#if !defined(__CUDACC__)
#error "device code: include this header from .cu files only"
#endif

#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/strided_index.h"
#include "kindling/core/check.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda {

// kLineThreads: threads of a block that reduces one line.
inline constexpr int kLineThreads = 256;
static_assert(kLineThreads % kWarp == 0 &&
              kLineThreads <= kMaxBlockReduceThreads);

// LineIndexer(): operand 0 is `out`, operand 1 is `in`, over in's shape with
// `axis` set to size 1 (its line starts).
inline StridedIndexer<2> LineIndexer(const TensorBase& out,
                                     const TensorBase& in, int axis) {
  const int rank = in.rank();
  KINDLING_CHECK(rank <= kMaxCudaRank, "cuda: rank %d above %d", rank,
                 kMaxCudaRank);
  int64_t dims[kMaxCudaRank];
  int64_t out_strides[kMaxCudaRank];
  int64_t in_strides[kMaxCudaRank];
  for (int i = 0; i < rank; ++i) {
    dims[i] = i == axis ? 1 : in.shape()[i];
    out_strides[i] = out.strides()[i];
    in_strides[i] = in.strides()[i];
  }
  const int64_t* strides[2] = {out_strides, in_strides};
  return MakeStridedIndexer<2>(rank, dims, strides);
}

// UseBlockPerLine(): a block per line when the line is read with unit
// stride or there are too few lines to fill the GPU with a thread each.
inline bool UseBlockPerLine(int64_t lines, int64_t n, int64_t in_axis_stride) {
  if (n <= 32) return false;
  return in_axis_stride == 1 || lines < 4096;
}

// SumType<T>: sums accumulate in double for f32/f64 (as the CPU does), f32
// for the 16-bit floats, and wrapping uint64 for integers.
template <class T>
using SumType = std::conditional_t<
    kIsHalfType<T>, float,
    std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>>;

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_LINES_H_
