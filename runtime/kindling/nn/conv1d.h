// Conv1d: 1-D convolution over [N, C, L] (torch.nn.Conv1d's weight
// [out, in, K] and bias), run as the 2-D convolution of a height-1 image, so
// it shares Conv2d's kernels and fused backward.
//
//   auto conv = kindling::nn::Conv1dConfig{.in_channels = 64,
//                                          .out_channels = 64,
//                                          .kernel_size = 3,
//                                          .padding = 1}.Init();
//   Tensor<3> y = conv.Forward(x);  // [N, 64, L] -> [N, 64, L]
#ifndef KINDLING_NN_CONV1D_H_
#define KINDLING_NN_CONV1D_H_

#include <cmath>
#include <cstdint>
#include <optional>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/conv2d.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE Conv1d {
  Param<Tensor<3>> weight;               // [out, in, K]
  std::optional<Param<Tensor<1>>> bias;  // [out]
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;

  // Forward(): [N, in, L] -> [N, out, OL]. Aborts naming the shapes when
  // the channels differ or the kernel does not fit.
  Tensor<3> Forward(const Tensor<3>& input) const {
    const int64_t kernel = weight->dim(2);
    KINDLING_CHECK(input.dim(1) == weight->dim(1),
                   "Conv1d: input %s has %d channels, the weight %s expects %d",
                   input.shape().ToString(), input.dim(1),
                   weight->shape().ToString(), weight->dim(1));
    const Window2d window{
        {1, kernel}, {1, stride}, {0, padding}, {1, dilation}};
    const Tensor<4> output = Convolve2d(
        input.unsqueeze(2), weight->unsqueeze(2),
        bias.has_value() ? std::optional<Tensor<1>>(**bias) : std::nullopt,
        window);
    return output.squeeze(2);
  }
};

struct Conv1dConfig {
  int64_t in_channels;
  int64_t out_channels;
  int64_t kernel_size;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  bool bias = true;
  Initializer initializer = Initializer::KaimingUniform(1.0 / std::sqrt(3.0));

  // Init() builds a lazy Conv1d with PyTorch's fans: in * K and out * K.
  Conv1d Init(const Device& device = Device::Cpu()) const {
    const int64_t fan_in = in_channels * kernel_size;
    const int64_t fan_out = out_channels * kernel_size;
    Conv1d conv{initializer.Init<3>({out_channels, in_channels, kernel_size},
                                    device, fan_in, fan_out),
                std::nullopt, stride, padding, dilation};
    if (bias) {
      conv.bias = initializer.Init<1>({out_channels}, device, fan_in, fan_out);
    }
    return conv;
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_CONV1D_H_
