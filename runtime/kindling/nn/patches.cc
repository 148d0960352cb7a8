#include "kindling/nn/patches.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"

namespace kindling::nn {
namespace {

// Pads `input` by `before`/`after` cells of `value` along `axis`.
Tensor<4> PadAxis(const Tensor<4>& input, int axis, int64_t cells,
                  double value) {
  if (cells == 0) return input;
  Shape pad_shape = input.shape();
  pad_shape[axis] = cells;
  const Tensor<4> pad =
      Tensor<4>::Full(pad_shape, value, input.device(), input.dtype());
  return cat(std::vector<Tensor<4>>{pad, input, pad}, axis);
}

}  // namespace

int64_t Window2d::OutputSize(int axis, int64_t input) const {
  const int64_t span = dilation[axis] * (kernel[axis] - 1) + 1;
  const int64_t padded = input + 2 * padding[axis];
  KINDLING_CHECK(kernel[axis] > 0 && stride[axis] > 0 && dilation[axis] > 0 &&
                     padding[axis] >= 0,
                 "window: kernel %d, stride %d, dilation %d, padding %d along "
                 "axis %d must be positive (padding >= 0)",
                 kernel[axis], stride[axis], dilation[axis], padding[axis],
                 axis);
  KINDLING_CHECK(padded >= span,
                 "window: kernel span %d does not fit the padded input %d "
                 "along axis %d",
                 span, padded, axis);
  return (padded - span) / stride[axis] + 1;
}

namespace {

// Rows() / Columns() view the window positions' cells for kernel row i
// (column j) inside a padded [N, C, H + 2 ph, W + 2 pw] tensor: the
// strided slice of OH (OW) cells the patches' entry i * KW + j reads.
TensorBase Rows(const TensorBase& padded, const Window2d& window, int64_t i,
                int64_t out_h) {
  const int64_t top = i * window.dilation[0];
  return padded.Slice(2, top, top + (out_h - 1) * window.stride[0] + 1,
                      window.stride[0]);
}
TensorBase Columns(const TensorBase& rows, const Window2d& window, int64_t j,
                   int64_t out_w) {
  const int64_t left = j * window.dilation[1];
  return rows.Slice(3, left, left + (out_w - 1) * window.stride[1] + 1,
                    window.stride[1]);
}

Tensor<5> PatchesForward(const Tensor<4>& input, const Window2d& window,
                         double pad_value) {
  const Shape shape = input.shape();
  const int64_t out_h = window.OutputSize(0, shape[2]);
  const int64_t out_w = window.OutputSize(1, shape[3]);
  const Tensor<4> padded =
      PadAxis(PadAxis(input, 2, window.padding[0], pad_value), 3,
              window.padding[1], pad_value);
  std::vector<Tensor<4>> positions;
  positions.reserve(window.kernel[0] * window.kernel[1]);
  for (int64_t i = 0; i < window.kernel[0]; ++i) {
    const TensorBase rows = Rows(padded.base(), window, i, out_h);
    for (int64_t j = 0; j < window.kernel[1]; ++j) {
      positions.emplace_back(Columns(rows, window, j, out_w));
    }
  }
  return stack(positions, 2);
}

}  // namespace

Tensor<5> Patches(const Tensor<4>& input, const Window2d& window,
                  double pad_value) {
  if (!autograd::ShouldRecord(input.base())) {
    return PatchesForward(input, window, pad_value);
  }
  TensorBase patches = autograd::Untracked(
      [&] { return PatchesForward(input, window, pad_value).base(); });
  return Tensor<5>(autograd::Record(
      "patches", {input.base()}, std::move(patches),
      [window, input_shape = input.shape()](const TensorBase& grad) {
        return GradList{
            PatchesBackward(Tensor<5>(grad), window, input_shape).base()};
      }));
}

Tensor<4> PatchesBackward(const Tensor<5>& patches_grad, const Window2d& window,
                          const Shape& input_shape) {
  const TensorBase& grad = patches_grad.base();
  const int64_t out_h = grad.shape()[3];
  const int64_t out_w = grad.shape()[4];
  KINDLING_CHECK(
      grad.rank() == 5 && grad.shape()[0] == input_shape[0] &&
          grad.shape()[1] == input_shape[1] &&
          grad.shape()[2] == window.kernel[0] * window.kernel[1] &&
          out_h == window.OutputSize(0, input_shape[2]) &&
          out_w == window.OutputSize(1, input_shape[3]),
      "patches backward: gradient %s does not match input %s under the "
      "window",
      grad.shape().ToString(), input_shape.ToString());
  const int64_t pad_h = window.padding[0];
  const int64_t pad_w = window.padding[1];
  TensorBase padded =
      ops::Full(Shape{input_shape[0], input_shape[1],
                      input_shape[2] + 2 * pad_h, input_shape[3] + 2 * pad_w},
                0.0, grad.dtype(), grad.device());
  // Window positions overlap when stride < dilated kernel: the in-place adds
  // accumulate into shared cells, one kernel entry at a time.
  for (int64_t i = 0; i < window.kernel[0]; ++i) {
    const TensorBase rows = Rows(padded, window, i, out_h);
    for (int64_t j = 0; j < window.kernel[1]; ++j) {
      TensorBase cells = Columns(rows, window, j, out_w);
      ops::BinaryInPlace(
          BinaryOp::kAdd, cells,
          grad.Narrow(2, i * window.kernel[1] + j, 1).Squeeze(2));
    }
  }
  return Tensor<4>(
      padded.Narrow(2, pad_h, input_shape[2]).Narrow(3, pad_w, input_shape[3]));
}

}  // namespace kindling::nn
