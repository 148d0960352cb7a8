// MaxPool2x2Row: one output row of the commonest max pool -- 2x2 windows at
// stride 2, no padding, no dilation, f32 -- eight window positions per AVX2
// step; MaxPool2x2BackwardRow its backward.
//
// The general MaxPool2d loop walks one window at a time with run-time kernel
// sizes, strides and dilations: about 25 cycles an output, which made max
// pooling a fifth of a small CNN's training step. Here the two input rows are
// loaded sixteen floats at a time, split into even and odd columns with two
// shuffles, and the four kernel entries are compared lane-wise.
//
// Same rule as the general kernel (backend.h, MaxPool2d): entries are taken
// in kernel order (0,0), (0,1), (1,0), (1,1); a larger value or the first NaN
// replaces the best, so ties keep the first entry and NaN propagates. The
// argmax is the flat input cell h * width + w.
//
//   for (oh ...) MaxPool2x2Row(plane + 2 * oh * row_stride,
//                              plane + (2 * oh + 1) * row_stride, out_w,
//                              2 * oh * width, width, /*relu=*/false,
//                              out_row, argmax_row);
#ifndef KINDLING_BACKEND_CPU_MAX_POOL_2X2_H_
#define KINDLING_BACKEND_CPU_MAX_POOL_2X2_H_

#include <cstdint>

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

// FitsMaxPool2x2Row() is true when MaxPool2x2Row() and
// MaxPool2x2BackwardRow() compute `window` over planes `width` wide:
// kernel 2x2, stride 2x2, padding 0, dilation 1, and a width below 2^30
// (the argmax offsets are computed in 32-bit lanes).
bool FitsMaxPool2x2Row(const Window2dGeometry& window, int64_t width);

// kMinBackwardRowWindows: the fewest windows in a row MaxPool2x2BackwardRow()
// takes.
inline constexpr int64_t kMinBackwardRowWindows = 8;

// FitsMaxPool2x2() is true when MaxPool2x2Row() computes this pool: an f32
// input with unit-stride rows narrower than 2^30 (the argmax offsets are
// computed in 32-bit lanes), and kernel 2x2, stride 2x2, padding 0,
// dilation 1.
bool FitsMaxPool2x2(const TensorBase& input, const Window2dGeometry& window);

// MaxPool2x2Row() writes out[0, out_w) (and argmax[0, out_w) unless argmax
// is null) from the unit-stride input rows `top` and `bottom`, which hold at
// least 2 * out_w floats each. `top_cell` is the flat cell index of top[0]
// (2 * oh * width), `width` the plane's width for the argmax. With `relu`
// the row is PoolActivation::kRelu's (backend.h): relu of each maximum,
// argmax -1 where the maximum is <= 0.
void MaxPool2x2Row(const float* top, const float* bottom, int64_t out_w,
                   int64_t top_cell, int64_t width, bool relu, float* out,
                   int64_t* argmax);

// MaxPool2x2CodesRow() is MaxPool2x2Row() with the argmax written as
// window codes (backend.h: 0 1 / 2 3 within each window, kNoWindowCell
// where kRelu passes no gradient), one byte a window, unless codes is null.
void MaxPool2x2CodesRow(const float* top, const float* bottom, int64_t out_w,
                        bool relu, float* out, uint8_t* codes);

// FitsMaxPool2x2Backward() is true when MaxPool2x2BackwardRow() computes
// this pool's backward: an f32 gradient with unit-stride rows of at least
// eight windows, an input narrower than 2^30, and the window
// FitsMaxPool2x2() takes. (On shorter rows the general kernel's zero fill
// and scatter measured faster: 0.17 against 0.35 ms on the example CNN's
// second pool, [128, 64, 14, 14] on one thread.)
bool FitsMaxPool2x2Backward(const TensorBase& input_grad,
                            const TensorBase& grad,
                            const Window2dGeometry& window);

// MaxPool2x2BackwardRow() writes the input gradient under one output row:
// top[0, 2 * out_w) and bottom[0, 2 * out_w), each cell grad[ow] if it is
// its window's argmax and 0 otherwise (argmax -1: no cell). `argmax` is
// what MaxPool2x2Row() wrote for the row, `top_cell` and `width` as there;
// out_w >= 8.
// Every cell is written once, without a zero fill or a scatter, and
// without a branch on the argmax: after a fused ReLU (-1 for about half the
// windows) a scatter's branch mispredicts, which doubled the time of the
// general kernel's backward (benches/conv_bench).
void MaxPool2x2BackwardRow(const float* grad, const int64_t* argmax,
                           int64_t out_w, int64_t top_cell, int64_t width,
                           float* top, float* bottom);

// MaxPool2x2BackwardCodesRow() is MaxPool2x2BackwardRow() from the window
// codes MaxPool2x2CodesRow() wrote for the row; out_w >= 8.
void MaxPool2x2BackwardCodesRow(const float* grad, const uint8_t* codes,
                                int64_t out_w, float* top, float* bottom);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_MAX_POOL_2X2_H_
