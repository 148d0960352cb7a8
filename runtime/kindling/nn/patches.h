// Patches(): the im2col step as a differentiable op, for windowed layers
// without a dedicated kernel (AvgPool2d, user code). Conv2d and MaxPool2d
// call the sliding-window kernels (kindling/tensor/window_ops.h) directly.
//
// For an input [N, C, H, W] and a KH x KW window it returns
// [N, C, KH * KW, OH, OW]: entry (n, c, i * KW + j, oh, ow) is the input
// element under window position (i, j) when the window's corner sits at
// (oh * stride_h - pad_h + i * dilation_h, ow * stride_w - pad_w + ...).
// Padding cells hold `pad_value` (0 for convolution and average pooling,
// -infinity for max pooling).
//
// PatchesBackward() is the adjoint (col2im): it sums each patch entry back
// into the input cell it was read from, so cells under several overlapping
// windows get the sum. Patches() records one autodiff node whose backward is
// PatchesBackward(). Both run on the backend's Im2Col / Col2Im kernels.
#ifndef KINDLING_NN_PATCHES_H_
#define KINDLING_NN_PATCHES_H_

#include <array>
#include <cstdint>

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// Window2d: the geometry of a 2-D sliding window, (height, width) pairs.
struct Window2d {
  std::array<int64_t, 2> kernel;
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};

  // OutputSize() is the number of window positions along `axis` (0: height,
  // 1: width) for an input of `input` cells. Aborts if the window does not
  // fit even once.
  int64_t OutputSize(int axis, int64_t input) const;

  // Geometry() is this window in the backend's terms.
  Window2dGeometry Geometry() const;
};

// Patches(): [N, C, H, W] -> [N, C, KH * KW, OH, OW]. See the file comment.
// The result is a view (a permutation of the [C, KH * KW, N, OH, OW]
// buffer the kernel fills).
Tensor<5> Patches(const Tensor<4>& input, const Window2d& window,
                  double pad_value);

// PatchesBackward(): [N, C, KH * KW, OH, OW] -> `input_shape` [N, C, H, W],
// the sum over window positions of each patch entry placed at its input
// cell; entries that fell on padding are dropped. `patches_grad` may be any
// view (e.g. expanded); it is copied first unless it already has the
// layout of Patches()' result.
Tensor<4> PatchesBackward(const Tensor<5>& patches_grad, const Window2d& window,
                          const Shape& input_shape);

}  // namespace kindling::nn

#endif  // KINDLING_NN_PATCHES_H_
