// A test launcher for block_reduce.h: BlockAllReduce over a combine that is
// associative but not commutative, so a wrong order shows.
#ifndef KINDLING_TESTS_BACKEND_CUDA_BLOCK_REDUCE_KERNELS_H_
#define KINDLING_TESTS_BACKEND_CUDA_BLOCK_REDUCE_KERNELS_H_

#include <cstdint>

namespace kindling::cuda::testing {

// AffineMap: x -> scale * x + shift over uint32 (wrapping). Composition is
// associative and, for most maps, not commutative.
struct AffineMap {
  uint32_t scale;
  uint32_t shift;
};

// ComposeInBlock() runs one block of `threads` threads (a multiple of 32, at
// most 1024); thread i holds maps[i], and BlockAllReduce composes them, map
// 0 applied first. Writes every thread's result to results[i] and
// synchronizes. `maps` and `results` are host arrays of `threads` entries.
void ComposeInBlock(const AffineMap* maps, int threads, AffineMap* results);

}  // namespace kindling::cuda::testing

#endif  // KINDLING_TESTS_BACKEND_CUDA_BLOCK_REDUCE_KERNELS_H_
