// Conv2d: 2-D convolution as im2col + one whole-batch GEMM, with a fused
// backward (one autodiff node: the GEMMs of the weight and input gradients,
// then col2im).
//
//   auto conv = kindling::nn::Conv2dConfig{.in_channels = 3,
//                                          .out_channels = 16,
//                                          .kernel_size = {3, 3},
//                                          .padding = {1, 1}}.Init();
//   Tensor<4> y = conv.Forward(images);  // [N, 3, H, W] -> [N, 16, H, W]
//
// The weight is [out_channels, in_channels, KH, KW], PyTorch's layout; groups
// are not supported (groups = 1).
#ifndef KINDLING_NN_CONV2D_H_
#define KINDLING_NN_CONV2D_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/patches.h"
#include "kindling/nn/pool2d.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE Conv2d {
  Param<Tensor<4>> weight;               // [out, in, KH, KW]
  std::optional<Param<Tensor<1>>> bias;  // [out]
  Window2d window;                       // kernel, stride, padding, dilation

  // Forward(): [N, in, H, W] -> [N, out, OH, OW].
  Tensor<4> Forward(const Tensor<4>& input) const;

  // ForwardMaxPool(): pool.Forward(Forward(input)), or with
  // PoolActivation::kRelu pool.ForwardRelu(Forward(input)) -- the same
  // values and gradients -- as one autodiff node whose kernels may pool the
  // convolution's output where they compute it, never writing it out as
  // [N, out, OH, OW] (Backend::Conv2dMaxPool; on the CPU, oneDNN's
  // convolutions pool their blocked output, docs/performance.md).
  Tensor<4> ForwardMaxPool(
      const Tensor<4>& input, const MaxPool2d& pool,
      PoolActivation activation = PoolActivation::kNone) const;
};

// Convolve2d(): the convolution Conv2d::Forward runs, of `input`
// [N, in, H, W] with `weight` [out, in, KH, KW] (and `bias` [out]) over
// `window`, recorded as one autodiff node; Conv1d runs it on height-1
// views.
Tensor<4> Convolve2d(const Tensor<4>& input, const Tensor<4>& weight,
                     const std::optional<Tensor<1>>& bias,
                     const Window2d& window);

struct Conv2dConfig {
  int64_t in_channels;
  int64_t out_channels;
  std::array<int64_t, 2> kernel_size;
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};
  bool bias = true;
  Initializer initializer = Initializer::KaimingUniform(1.0 / std::sqrt(3.0));

  // Init() builds a lazy Conv2d: allocates nothing. Fans are PyTorch's:
  // fan_in = in * KH * KW, fan_out = out * KH * KW.
  Conv2d Init(const Device& device = Device::Cpu()) const;
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_CONV2D_H_
