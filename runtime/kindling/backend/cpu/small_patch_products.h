// The weight and bias gradients of a convolution whose patch (input
// channels x window) is small, as in a first layer on grey images (1
// channel, 3 x 3: 9 taps), for the per-sample Conv2d (conv2d.cc), in f32
// with AVX2 and FMA:
//
//   dw [O, P] += g [O, L] x columns^T [L, P],   db [O] += g x 1
//
// A GEMM library handles this shape badly: the output is P = 9 wide and the
// reduction L long, so packing the operands costs more than the arithmetic.
// Here one vector of partial sums per tap (and one for the bias) stays in
// registers while g streams by. (The forward, y = w x columns with k = 9,
// stays on the GEMM, which measured as fast as a direct kernel: both are
// bound by writing y.)
//
// Lane l of each partial sum takes positions l, l + 8, ... in order, as a
// chain of fused multiply-adds, and SumLanes() adds the lanes in order, so
// results do not depend on alignment or on the tail. Where the CPU has
// AVX-512 (HasAvx512(), vector_math.h) a row's first multiple of sixteen
// positions runs sixteen lanes wide, lane l taking l, l + 16, ..., and
// lanes l and l + 8 are added into partial sum l: the same on every run,
// but different in the last bits from an AVX2 CPU's sums.
#ifndef KINDLING_BACKEND_CPU_SMALL_PATCH_PRODUCTS_H_
#define KINDLING_BACKEND_CPU_SMALL_PATCH_PRODUCTS_H_

#include <cstdint>

namespace kindling::cpu {

// kMaxSmallPatch: the largest patch taken: one partial sum per tap in a
// register. (A 3 x 3 window on one channel, 9 taps, is what was measured.)
inline constexpr int64_t kMaxSmallPatch = 12;

// kGradientLanes: the partial sums each weight / bias gradient keeps.
inline constexpr int64_t kGradientLanes = 8;

// SmallPatchGradients: one slab's partial sums, kGradientLanes per weight
// (out_channels x patch of them) and per bias (out_channels).
struct SmallPatchGradients {
  float* weight_lanes;  // [out_channels, patch, kGradientLanes] or null
  float* bias_lanes;    // [out_channels, kGradientLanes] or null
};

// SmallPatchAccumulate() adds one sample's g [out_channels, positions] x
// columns^T [positions, patch] (and g's row sums) to `lanes`.
void SmallPatchAccumulate(const float* g, const float* columns,
                          int64_t out_channels, int64_t patch,
                          int64_t positions, const SmallPatchGradients& lanes);

// SumLanes() writes each run of kGradientLanes partial sums, added in lane
// order, to out[i] (count runs).
void SumLanes(const float* lanes, int64_t count, float* out);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_SMALL_PATCH_PRODUCTS_H_
