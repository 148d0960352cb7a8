// DeviceNet: the small model the device tests move, load and train on the
// fake cuda device (fake_cuda.h): Linear - BatchNorm (parameters and
// buffers) - ReLU - Linear, lazily initialized like every nn layer.
#ifndef KINDLING_TESTS_SUPPORT_DEVICE_TEST_MODEL_H_
#define KINDLING_TESTS_SUPPORT_DEVICE_TEST_MODEL_H_

#include <cstdint>

#include "kindling/module/annotations.h"
#include "kindling/nn/batch_norm.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor.h"

namespace devtest {

struct KINDLING_MODULE DeviceNet {
  kindling::nn::Linear fc1;
  kindling::nn::BatchNorm<2> norm;
  kindling::nn::Linear fc2;

  // Forward(): [batch, d_input] -> [batch, d_output].
  kindling::Tensor<2> Forward(const kindling::Tensor<2>& x,
                              kindling::nn::ForwardMode mode) const {
    return fc2.Forward(norm.Forward(fc1.Forward(x), mode).relu());
  }
};

struct DeviceNetConfig {
  int64_t d_input = 12;
  int64_t d_hidden = 16;
  int64_t d_output = 4;

  DeviceNet Init(
      const kindling::Device& device = kindling::Device::Cpu()) const {
    return DeviceNet{
        kindling::nn::LinearConfig{d_input, d_hidden}.Init(device),
        kindling::nn::BatchNormConfig{d_hidden}.Init<2>(device),
        kindling::nn::LinearConfig{d_hidden, d_output}.Init(device)};
  }
};

}  // namespace devtest

#endif  // KINDLING_TESTS_SUPPORT_DEVICE_TEST_MODEL_H_
