#include "kindling/nn/patches.h"

#include <cstdint>
#include <vector>

#include "kindling/core/check.h"

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

Tensor<5> Patches(const Tensor<4>& input, const Window2d& window,
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
    const int64_t top = i * window.dilation[0];
    const Tensor<4> rows = padded.slice(
        2, top, top + (out_h - 1) * window.stride[0] + 1, window.stride[0]);
    for (int64_t j = 0; j < window.kernel[1]; ++j) {
      const int64_t left = j * window.dilation[1];
      positions.push_back(rows.slice(3, left,
                                     left + (out_w - 1) * window.stride[1] + 1,
                                     window.stride[1]));
    }
  }
  return stack(positions, 2);
}

}  // namespace kindling::nn
