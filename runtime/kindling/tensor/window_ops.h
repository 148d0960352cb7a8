// Sliding-window ops on NCHW tensors: im2col and col2im (convolution as one
// GEMM) and max pooling with the argmax its gradient needs. See ops.h for
// the conventions all ops share; Window2dGeometry (backend.h) defines the
// window.
//
// These are kernels, not differentiable ops: they record no autodiff node
// and their results never require grad. The layers that use them (Conv2d,
// MaxPool2d, Patches in runtime/kindling/nn) record one fused node each,
// whose backward calls the adjoint here (Col2Im, MaxPool2dBackward,
// Conv2dBackward).
//
//   TensorBase columns = ops::Im2Col(images, window, 0.0);  // [C*K, N*L]
//   TensorBase out = ops::Matmul(weight.Reshape({O, C * K}), columns);
#ifndef KINDLING_TENSOR_WINDOW_OPS_H_
#define KINDLING_TENSOR_WINDOW_OPS_H_

#include <cstdint>

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Window2dOutputSize() is the number of window positions along `axis`
// (0: height, 1: width) for an input of `input` cells. Aborts if a window
// field is not positive (padding: negative) or the window never fits.
int64_t Window2dOutputSize(const Window2dGeometry& window, int axis,
                           int64_t input);

// Im2Col(): input [N, C, H, W] -> the contiguous columns matrix
// [C * KH * KW, N * OH * OW]: row c * K + k, column (n * OH + oh) * OW + ow
// holds the input cell under kernel entry k = i * KW + j of window position
// (oh, ow) in plane (n, c), or `pad_value` on padding. Laid out so that
// weight [O, C * K] x columns is the whole batch's convolution in one GEMM
// (output [O, N, OH, OW]).
TensorBase Im2Col(const TensorBase& input, const Window2dGeometry& window,
                  double pad_value);

// Col2Im(): the adjoint of Im2Col: columns [C * KH * KW, N * OH * OW] (any
// view) -> [N, C, H, W] (`input_shape`), each input cell the sum of the
// column entries Im2Col read from it; entries on padding are dropped.
TensorBase Col2Im(const TensorBase& columns, const Window2dGeometry& window,
                  const Shape& input_shape);

// MaxPool2dResult: the pooled values and, when asked for, each window's
// argmax as h * W + w in its input plane (i64, [N, C, OH, OW]).
struct MaxPool2dResult {
  TensorBase output;  // [N, C, OH, OW]
  TensorBase argmax;  // [N, C, OH, OW] i64, or undefined
};

// MaxPool2d(): [N, C, H, W] -> the maximum of each window (padding never
// wins; ties go to the first cell in kernel order), with the argmax when
// `with_argmax`. A window that covers only padding gives -infinity and
// argmax -1 (its gradient is dropped). With PoolActivation::kRelu each
// maximum then goes through a ReLU, and the argmax is -1 where the ReLU
// passes no gradient (backend.h): MaxPool2dBackward() through it is the
// gradient of the pool and the ReLU together.
MaxPool2dResult MaxPool2d(const TensorBase& input,
                          const Window2dGeometry& window, bool with_argmax,
                          PoolActivation activation = PoolActivation::kNone);

// MaxPool2dBackward(): grad [N, C, OH, OW] routed to each window's argmax
// cell of a zero [N, C, H, W] (`input_shape`), summed where windows share
// a maximum. `window` is the forward's; grad's shape must be its output.
TensorBase MaxPool2dBackward(const TensorBase& grad, const TensorBase& argmax,
                             const Shape& input_shape,
                             const Window2dGeometry& window);

// Conv2d(): the 2-D convolution (cross-correlation, as in PyTorch) of input
// [N, C, H, W] with weight [O, C, KH, KW], plus bias [O] when it is defined:
// [N, O, OH, OW]. `window.kernel` must be {KH, KW}. Aborts naming the
// mismatch when shapes, dtypes or devices disagree.
TensorBase Conv2d(const TensorBase& input, const TensorBase& weight,
                  const TensorBase& bias, const Window2dGeometry& window);

// Conv2dGradients: what Conv2dBackward() computed; undefined where not asked.
struct Conv2dGradients {
  TensorBase input;   // [N, C, H, W]
  TensorBase weight;  // [O, C, KH, KW]
  TensorBase bias;    // [O]
};

// Conv2dBackward(): the gradients of Conv2d() for its output gradient `grad`
// [N, O, OH, OW]: the input's (of `input_shape`) when `weight` is given,
// since that is what it reads; the weight's (of `weight_shape`) when `input`
// is given; the bias's when `with_bias`.
Conv2dGradients Conv2dBackward(const TensorBase& grad, const TensorBase& input,
                               const TensorBase& weight,
                               const Shape& input_shape,
                               const Shape& weight_shape,
                               const Window2dGeometry& window, bool with_bias);

// Conv2dMaxPool(): MaxPool2d(Conv2d(input, weight, bias, conv), pool,
// with_argmax, activation). Where the backend pools the convolution's
// output as it computes it (Backend::Conv2dMaxPool) that output is never
// written out, and the argmax is window codes (u8, backend.h: one byte a
// window); elsewhere the two ops run one after the other, and the argmax is
// MaxPool2d()'s i64 cell of the convolution's output plane. Either is what
// Conv2dMaxPoolBackward() takes. Aborts as Conv2d() does.
MaxPool2dResult Conv2dMaxPool(const TensorBase& input, const TensorBase& weight,
                              const TensorBase& bias,
                              const Window2dGeometry& conv,
                              const Window2dGeometry& pool, bool with_argmax,
                              PoolActivation activation);

// WindowCodesToCells(): window codes (u8, backend.h) of a pool over planes
// of `input_shape` [N, C, H, W] as MaxPool2d()'s argmax: the i64 cell
// h * W + w of each window's maximum, or -1 for kNoWindowCell. Aborts on
// shapes that do not match or on a code outside its window.
TensorBase WindowCodesToCells(const TensorBase& codes, const Shape& input_shape,
                              const Window2dGeometry& window);

// Conv2dMaxPoolBackward(): the gradients of Conv2dMaxPool() for its pooled
// output's gradient `grad` [N, O, PH, PW] and its `argmax` (either kind): those
// of Conv2dBackward() for the gradient MaxPool2dBackward() routes to the
// convolution's output, which a fusing backend never writes out. Operands
// as Conv2dBackward()'s.
Conv2dGradients Conv2dMaxPoolBackward(
    const TensorBase& grad, const TensorBase& argmax, const TensorBase& input,
    const TensorBase& weight, const Shape& input_shape,
    const Shape& weight_shape, const Window2dGeometry& conv,
    const Window2dGeometry& pool, bool with_bias);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_WINDOW_OPS_H_
