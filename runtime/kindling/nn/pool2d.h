// MaxPool2d and AvgPool2d: 2-D pooling over sliding windows.
//
// They hold no parameters, so they are plain structs, not marked modules: a
// model keeps them as constants (copied and printed, not saved).
//
//   kindling::nn::MaxPool2d pool =
//       kindling::nn::MaxPool2dConfig{.kernel_size = {2, 2}, .stride = {2, 2}}
//           .Init();
//   Tensor<4> y = pool.Forward(x);  // [N, C, H, W] -> [N, C, H/2, W/2]
#ifndef KINDLING_NN_POOL2D_H_
#define KINDLING_NN_POOL2D_H_

#include <array>
#include <cstdint>
#include <ostream>

#include "kindling/nn/patches.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// MaxPool2d: the maximum of each window; padding never wins. The gradient
// goes to the window's maximum (the first one on ties, as PyTorch does):
// when a gradient is needed the forward keeps each window's argmax (the
// backend's fused MaxPool2d kernel), and the backward scatters through it
// (one autodiff node).
struct MaxPool2d {
  Window2d window;

  Tensor<4> Forward(const Tensor<4>& input) const;

  // ForwardRelu() is Forward(input).relu() -- the same values and
  // gradients -- in one pass over the input and one autodiff node: the
  // ReLU is applied to each window's maximum as it is written, and a window
  // whose maximum the ReLU zeroes keeps no argmax, so the backward is the
  // pool's alone.
  Tensor<4> ForwardRelu(const Tensor<4>& input) const;

 private:
  Tensor<4> Pool(const Tensor<4>& input, PoolActivation activation,
                 const char* name) const;
};

// AvgPool2d: the mean of each window; padding cells count as zeros
// (PyTorch's count_include_pad=True), so the backward spreads each output's
// gradient evenly over all KH * KW cells of its window, padding included
// (then dropped), summing where windows overlap (one autodiff node).
struct AvgPool2d {
  Window2d window;

  Tensor<4> Forward(const Tensor<4>& input) const;
};

// MaxPool2dConfig / AvgPool2dConfig: the usual config-then-Init() shape, for
// symmetry with the parameter-holding layers. Init() allocates nothing (there
// is nothing to allocate); the device argument is accepted for uniformity.
struct MaxPool2dConfig {
  std::array<int64_t, 2> kernel_size;
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};

  MaxPool2d Init(const Device& = Device::Cpu()) const {
    return MaxPool2d{Window2d{kernel_size, stride, padding, dilation}};
  }
};

struct AvgPool2dConfig {
  std::array<int64_t, 2> kernel_size;
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};

  AvgPool2d Init(const Device& = Device::Cpu()) const {
    return AvgPool2d{Window2d{kernel_size, stride, padding}};
  }
};

std::ostream& operator<<(std::ostream& os, const Window2d& window);
std::ostream& operator<<(std::ostream& os, const MaxPool2d& pool);
std::ostream& operator<<(std::ostream& os, const AvgPool2d& pool);

}  // namespace kindling::nn

#endif  // KINDLING_NN_POOL2D_H_
