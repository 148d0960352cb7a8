#include "kindling/nn/conv2d.h"

#include <cstdint>
#include <optional>

#include "kindling/core/check.h"

namespace kindling::nn {

Tensor<4> Conv2d::Forward(const Tensor<4>& input) const {
  const Shape in_shape = input.shape();
  const Shape w_shape = weight.lazy_shape();
  KINDLING_CHECK(in_shape[1] == w_shape[1],
                 "Conv2d: input %s has %d channels, the weight %s expects %d",
                 in_shape.ToString(), in_shape[1], w_shape.ToString(),
                 w_shape[1]);
  const int64_t batch = in_shape[0];
  const int64_t out_channels = w_shape[0];
  const int64_t window_size = w_shape[1] * w_shape[2] * w_shape[3];
  const Tensor<5> patches = Patches(input, window, 0.0);  // [N, C, K, OH, OW]
  const int64_t out_h = patches.dim(3);
  const int64_t out_w = patches.dim(4);
  const Tensor<3> columns =
      patches.reshape<3>({batch, window_size, out_h * out_w});
  const Tensor<2> kernel = weight->reshape<2>({out_channels, window_size});
  Tensor<3> output = matmul(kernel, columns);  // [N, out, OH * OW]
  if (bias.has_value()) {
    output = output + (*bias)->reshape<2>({out_channels, 1});
  }
  return output.reshape<4>({batch, out_channels, out_h, out_w});
}

Conv2d Conv2dConfig::Init(const Device& device) const {
  const int64_t kernel_area = kernel_size[0] * kernel_size[1];
  const int64_t fan_in = in_channels * kernel_area;
  const int64_t fan_out = out_channels * kernel_area;
  Conv2d conv{initializer.Init<4>(
                  {out_channels, in_channels, kernel_size[0], kernel_size[1]},
                  device, fan_in, fan_out),
              std::nullopt, Window2d{kernel_size, stride, padding, dilation}};
  if (bias)
    conv.bias = initializer.Init<1>({out_channels}, device, fan_in, fan_out);
  return conv;
}

}  // namespace kindling::nn
