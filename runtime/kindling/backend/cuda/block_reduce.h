// Warp and block all-reductions: the one way the CUDA kernels combine
// their threads' partial states (sums, maxima, argmax pairs, norms).
//
// Both reductions combine in thread order (combine(a, b) always sees the
// lower threads' state as a), so a combine that is associative but not
// commutative, such as argmax with the lower index winning ties, gives the
// same answer as a left-to-right pass would; and every thread ends up with
// the same bits, so a kernel may use the result in any thread without
// another broadcast.
#ifndef KINDLING_BACKEND_CUDA_BLOCK_REDUCE_H_
#define KINDLING_BACKEND_CUDA_BLOCK_REDUCE_H_

#if !defined(__CUDACC__)
#error "device code: include this header from .cu files only"
#endif

#include <type_traits>

namespace kindling::cuda {

inline constexpr int kWarp = 32;
// The most threads a block may have for BlockAllReduce (its scratch holds
// one state per warp).
inline constexpr int kMaxBlockReduceThreads = kWarp * kWarp;

// AddCombine: sums. Commutative bit for bit (IEEE and wrapping integer
// addition are), and says so.
struct AddCombine {
  static constexpr bool kCommutative = true;
  template <class V>
  __device__ V operator()(V a, V b) const {
    return a + b;
  }
};

// CommutativeCombine: the combine declares (kCommutative = true) that the
// order of its operands does not matter: combine(a, b) and combine(b, a) are
// the same bits (AddCombine), or differ only in ways the kernel using it
// cannot see in its outputs (softmax.cu's line max says why). Such a combine
// takes the butterfly without ordering, which costs fewer instructions.
template <class Combine>
concept CommutativeCombine = requires {
  requires Combine::kCommutative;
};

// ShuffleXor(): lane (lane ^ lane_mask)'s `value`, for any trivially
// copyable type; a struct (an argmax pair) travels as 32-bit words.
template <class V>
__device__ inline V ShuffleXor(V value, int lane_mask) {
  static_assert(std::is_trivially_copyable_v<V>);
  if constexpr (std::is_arithmetic_v<V> && sizeof(V) >= 4) {
    return __shfl_xor_sync(0xffffffffu, value, lane_mask);
  } else {
    constexpr int kWords = (sizeof(V) + 3) / 4;
    union Words {
      V value;
      unsigned word[kWords];
    } words;
    words.value = value;
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      words.word[i] = __shfl_xor_sync(0xffffffffu, words.word[i], lane_mask);
    }
    return words.value;
  }
}

// WarpAllReduce(): `combine` over the warp's 32 lanes, in every lane, with
// the same bits in every lane (for a CommutativeCombine, up to what it
// declared invisible).
//
// In general the butterfly's steps go from neighbouring lanes outwards
// (offsets 1, 2, ..., 16), so each partner holds a contiguous run of lanes
// and both put the lower run first. (Offsets from 16 down would pair lane 0
// with lane 16 first: the right sum, the wrong order.) A commutative combine
// needs no ordering, and takes offsets 16 down to 1 with combine(own,
// partner's): the order the f32 sums used before this header, kept so that
// their results did not move (for rows of 8 it is also the CPU's 8-lane
// order, bit for bit).
template <class V, class Combine>
__device__ inline V WarpAllReduce(V value, const Combine& combine) {
  if constexpr (CommutativeCombine<Combine>) {
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      value = combine(value, ShuffleXor(value, offset));
    }
  } else {
    const int lane = static_cast<int>(threadIdx.x % kWarp);
#pragma unroll
    for (int offset = 1; offset < kWarp; offset *= 2) {
      const V other = ShuffleXor(value, offset);
      value =
          (lane & offset) != 0 ? combine(other, value) : combine(value, other);
    }
  }
  return value;
}

// BlockAllReduce(): `combine` over the block's threads, in every thread:
// each warp's butterfly, then the warps' results in warp order. blockDim is
// one-dimensional, a multiple of kWarp and at most kMaxBlockReduceThreads;
// every thread of the block must call it. `scratch` is shared memory for
// kWarp states; the call ends with a barrier, so scratch is free for the
// next call.
template <class V, class Combine>
__device__ inline V BlockAllReduce(V value, V* scratch,
                                   const Combine& combine) {
  value = WarpAllReduce(value, combine);
  if (threadIdx.x % kWarp == 0) scratch[threadIdx.x / kWarp] = value;
  __syncthreads();
  V total = scratch[0];
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  for (int w = 1; w < warps; ++w) total = combine(total, scratch[w]);
  __syncthreads();
  return total;
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_BLOCK_REDUCE_H_
