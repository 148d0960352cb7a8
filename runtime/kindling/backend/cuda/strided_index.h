// StridedIndexer: the offsets of N operands of one shape, for CUDA kernels.
//
// An element-wise CUDA kernel gives each thread a linear index into the
// output's shape (row-major) and needs, for every operand, the element
// offset of that position under the operand's strides (which may be zero for
// a broadcast operand, or negative-free but arbitrary for a view).
// MakeStridedIndexer() drops size-1 dimensions and merges dimensions that are
// contiguous in every operand, so contiguous and scalar-broadcast operands
// collapse to rank 1 and the per-element index math is one multiply per
// operand with no division. The struct is passed to kernels by value (at
// most 16 dims: 16 * (N + 1) * 8 bytes of kernel parameters); every index is
// int64.
//
// Pure functions, KINDLING_HOST_DEVICE: tested on the host in the default
// build (tests/backend/cuda/strided_index_test.cc).
#ifndef KINDLING_BACKEND_CUDA_STRIDED_INDEX_H_
#define KINDLING_BACKEND_CUDA_STRIDED_INDEX_H_

#include <cstdint>

#include "kindling/tensor/philox.h"  // KINDLING_HOST_DEVICE

namespace kindling::cuda {

// kMaxCudaRank: the largest rank the CUDA kernels index (the CPU backend's
// limit too).
inline constexpr int kMaxCudaRank = 16;

template <int N>
struct StridedIndexer {
  int rank = 1;
  int64_t numel = 1;
  int64_t sizes[kMaxCudaRank] = {};
  int64_t strides[N][kMaxCudaRank] = {};  // in elements of each operand

  // Offsets() writes each operand's element offset of row-major position
  // `linear` (0 <= linear < numel).
  KINDLING_HOST_DEVICE void Offsets(int64_t linear, int64_t* offsets) const {
    for (int k = 0; k < N; ++k) offsets[k] = 0;
    for (int axis = rank - 1; axis > 0; --axis) {
      const int64_t size = sizes[axis];
      const int64_t quotient = linear / size;
      const int64_t index = linear - quotient * size;
      linear = quotient;
      for (int k = 0; k < N; ++k) offsets[k] += index * strides[k][axis];
    }
    for (int k = 0; k < N; ++k) offsets[k] += linear * strides[k][0];
  }
};

// MakeStridedIndexer() describes N operands of shape[0..rank), operand k
// having element strides strides[k][0..rank). REQUIRES: rank <= kMaxCudaRank.
template <int N>
StridedIndexer<N> MakeStridedIndexer(int rank, const int64_t* shape,
                                     const int64_t* const* strides) {
  StridedIndexer<N> indexer;
  int64_t numel = 1;
  for (int axis = 0; axis < rank; ++axis) numel *= shape[axis];
  indexer.numel = numel;
  int kept = 0;
  for (int axis = 0; axis < rank; ++axis) {
    if (shape[axis] == 1) continue;
    // Merge into the previous kept dim when contiguous for every operand.
    bool merge = kept > 0;
    for (int k = 0; merge && k < N; ++k) {
      merge = indexer.strides[k][kept - 1] == strides[k][axis] * shape[axis];
    }
    if (merge) {
      indexer.sizes[kept - 1] *= shape[axis];
      for (int k = 0; k < N; ++k) {
        indexer.strides[k][kept - 1] = strides[k][axis];
      }
      continue;
    }
    indexer.sizes[kept] = shape[axis];
    for (int k = 0; k < N; ++k) indexer.strides[k][kept] = strides[k][axis];
    ++kept;
  }
  if (kept == 0) {  // a scalar, or all dims of size 1
    indexer.sizes[0] = 1;
    for (int k = 0; k < N; ++k) indexer.strides[k][0] = 0;
    kept = 1;
  }
  indexer.rank = kept;
  return indexer;
}

// LaunchGrid: blocks and threads for a grid-stride loop over `count` items.
struct LaunchGrid {
  int64_t blocks = 0;
  int threads = 0;
};

// kMaxGridBlocks bounds a grid-stride launch: far more blocks than an H100
// keeps resident (132 SMs x 8 blocks of 256), and far below gridDim.x's
// 2^31 - 1 limit, so large tensors loop instead of overflowing the grid.
inline constexpr int64_t kMaxGridBlocks = int64_t{1} << 16;

// GridFor() is the launch for `count` items, `threads` per block; blocks is
// 0 when count is 0 (the caller skips the launch).
KINDLING_HOST_DEVICE inline LaunchGrid GridFor(int64_t count,
                                               int threads = 256) {
  LaunchGrid grid;
  grid.threads = threads;
  const int64_t needed = (count + threads - 1) / threads;
  grid.blocks = needed < kMaxGridBlocks ? needed : kMaxGridBlocks;
  return grid;
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_STRIDED_INDEX_H_
