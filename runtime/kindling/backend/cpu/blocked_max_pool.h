// MaxPoolBlocked and UnpoolBlocked: a 2x2, stride-2 max pool read straight
// from a convolution's output in oneDNN's blocked layouts, and its backward
// written straight into them.
//
// oneDNN's convolutions compute in a blocked layout, a block of channels
// innermost: [N, C / B, H, W, B], B = 16 (nChw16c) on AVX-512 and B = 8
// (nChw8c) on AVX2. Pooling that buffer where the convolution leaves it,
// instead of reordering it to Kindling's NCHW first, saves a pass over the
// convolution's output each way (a reorder out in the forward, a reorder of
// its gradient in in the backward), and a window's channels are plain vector
// loads, eight at a time: no shuffles, no tails.
//
// Library first: oneDNN's own max pooling (pooling_forward, jit:avx512_core)
// reads nChw16c too, but writes its output in nChw16c and its argmax as a
// u8 workspace in that layout, with no ReLU; Kindling's pooled tensors and
// saved argmax are NCHW. Measured when that argmax was i64 cells, on one
// 64-sample slab of the example CNN's conv2 output ([64, 64, 14, 14], in
// cache, one thread, medians of 200 calls): oneDNN's forward took 0.052 ms
// alone but 0.27 ms with the pass that turns its output and workspace into
// Kindling's contract, against 0.17-0.18 ms for MaxPoolBlocked (ReLU and
// argmax included). oneDNN's backward (0.073 ms) would need its workspace
// rebuilt from Kindling's argmax and the NCHW gradient reordered in first,
// the gather UnpoolBlocked does in its 0.135 ms; it was not adopted.
// Kindling's argmax is now one byte a window (window codes, backend.h), as
// oneDNN's workspace is, but still NCHW: the layout pass remains.
//
// Same values as MaxPool2d() and MaxPool2dBackward() (backend.h) on the
// NCHW copy, bit for bit: the window's cells are taken in kernel order
// (0,0), (0,1), (1,0), (1,1), a larger value or the first NaN replaces the
// best, kRelu zeroes a maximum that is not > 0 and keeps no argmax where it
// is <= 0, and the backward's cells are 0 + the routed gradient. The argmax
// is kept as window codes (backend.h), one byte a window.
//
//   // blocked: one slab's [n, 64 / 16, 14, 14, 16] convolution output
//   MaxPoolBlocked(blocked, {n, 64, 14, 14, 16}, PoolActivation::kRelu,
//                  out, codes);  // out, codes: [n, 64, 7, 7]
#ifndef KINDLING_BACKEND_CPU_BLOCKED_MAX_POOL_H_
#define KINDLING_BACKEND_CPU_BLOCKED_MAX_POOL_H_

#include <cstdint>

#include "kindling/tensor/backend.h"

namespace kindling::cpu {

// BlockedPlanes: the shape [N, C, H, W] of a blocked buffer's tensor and
// its block, the channels innermost (8 or 16).
struct BlockedPlanes {
  int64_t samples, channels, height, width, block;
};

// FitsBlockedMaxPool() is true when these kernels compute `pool` over
// `planes`: a 2x2 window at stride 2, no padding or dilation, a block of 8
// or 16 channels and whole blocks, and an even height and width (every cell
// under exactly one window, so the backward overwrites every cell).
bool FitsBlockedMaxPool(const BlockedPlanes& planes,
                        const Window2dGeometry& pool);

// MaxPoolBlocked() writes out [N, C, H / 2, W / 2] (NCHW, contiguous)
// and, unless `codes` is null, the argmax as window codes (the same shape:
// 0 1 / 2 3 within each window, or kNoWindowCell) from `blocked`
// [N, C / B, H, W, B], B = planes.block.
void MaxPoolBlocked(const float* blocked, const BlockedPlanes& planes,
                    PoolActivation activation, float* out, uint8_t* codes);

// UnpoolBlocked() overwrites `blocked` [N, C / B, H, W, B] with the pool's
// input gradient: each cell grad[n, c, h / 2, w / 2] where it is its
// window's argmax, else 0. `grad` and `codes` are [N, C, H / 2, W / 2]
// contiguous; a code above 3 (kNoWindowCell) routes nothing.
void UnpoolBlocked(const float* grad, const uint8_t* codes,
                   const BlockedPlanes& planes, float* blocked);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_BLOCKED_MAX_POOL_H_
