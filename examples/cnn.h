// Cnn: a small convolutional classifier for 28 x 28 grey images
// (Fashion-MNIST): conv 3x3 (32) - ReLU - max-pool 2 - conv 3x3 (64) - ReLU -
// max-pool 2 - Linear 3136 -> 128 - ReLU - Linear 128 -> 10.
#ifndef KINDLING_EXAMPLES_CNN_H_
#define KINDLING_EXAMPLES_CNN_H_

#include <cstdint>

#include "kindling/module/annotations.h"
#include "kindling/nn/conv2d.h"
#include "kindling/nn/linear.h"
#include "kindling/nn/pool2d.h"
#include "kindling/tensor/tensor.h"

namespace examples {

struct KINDLING_MODULE Cnn {
  kindling::nn::Conv2d conv1;
  kindling::nn::Conv2d conv2;
  kindling::nn::Linear fc1;
  kindling::nn::Linear fc2;

  // Forward(): [batch, 1, 28, 28] -> [batch, 10] logits.
  kindling::Tensor<2> Forward(const kindling::Tensor<4>& images) const {
    // The pool holds no parameters: built here rather than stored.
    const kindling::nn::MaxPool2d pool = kindling::nn::MaxPool2dConfig{
        .kernel_size = {2, 2},
        .stride = {2, 2}}.Init();
    // Pooling before the ReLU computes the same function, and the same
    // gradients, as the usual conv-ReLU-pool order (max and ReLU commute,
    // ties included: the ReLU keeps the order of the positive values and
    // passes no gradient where a window's maximum is not positive), but the
    // ReLU then runs on a quarter of the cells, and the pool applies it as
    // it writes each maximum: no pass of its own forward or backward.
    // ForwardMaxPool() is pool.ForwardRelu(conv.Forward(x)) as one op, which
    // on the CPU pools conv2's output in oneDNN's own layout, never writing
    // it out (docs/performance.md).
    const kindling::Tensor<4> x = conv2.ForwardMaxPool(
        conv1.ForwardMaxPool(images, pool, kindling::PoolActivation::kRelu),
        pool, kindling::PoolActivation::kRelu);
    const kindling::Tensor<2> flat = x.reshape<2>({x.dim(0), -1});
    return fc2.Forward(fc1.ForwardRelu(flat));
  }
};

struct CnnConfig {
  int64_t channels1 = 32;
  int64_t channels2 = 64;
  int64_t d_hidden = 128;
  int64_t num_classes = 10;

  Cnn Init(const kindling::Device& device = kindling::Device::Cpu()) const {
    using kindling::nn::Conv2dConfig;
    using kindling::nn::LinearConfig;
    return Cnn{Conv2dConfig{.in_channels = 1,
                            .out_channels = channels1,
                            .kernel_size = {3, 3},
                            .padding = {1, 1}}
                   .Init(device),
               Conv2dConfig{.in_channels = channels1,
                            .out_channels = channels2,
                            .kernel_size = {3, 3},
                            .padding = {1, 1}}
                   .Init(device),
               LinearConfig{channels2 * 7 * 7, d_hidden}.Init(device),
               LinearConfig{d_hidden, num_classes}.Init(device)};
  }
};

}  // namespace examples

#endif  // KINDLING_EXAMPLES_CNN_H_
