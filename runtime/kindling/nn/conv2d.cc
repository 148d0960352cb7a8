#include "kindling/nn/conv2d.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/saved_tensor.h"
#include "kindling/tensor/window_ops.h"

namespace kindling::nn {

namespace {

// ConvolutionSaved: what the conv2d node keeps for its backward, each only
// when the gradient that reads it is needed. Both are checked against
// in-place writes before backward reads them (an optimizer step taken
// between forward and backward). The kernel (ops::Conv2d, Backend::Conv2d)
// rebuilds the im2col columns in backward rather than keeping them: the
// input is alive anyway as the previous layer's output, and the columns are
// C * KH * KW times its size.
struct ConvolutionSaved {
  SavedTensor input;   // read by the weight's gradient
  SavedTensor weight;  // read by the input's gradient
  Shape input_shape;
  Shape weight_shape;
  Window2dGeometry window;
  bool need_bias;
};

// GradListOf() is the node's gradients in its inputs' order.
GradList GradListOf(ops::Conv2dGradients grads, bool need_bias) {
  GradList result = {std::move(grads.input), std::move(grads.weight)};
  if (need_bias) result.push_back(std::move(grads.bias));
  return result;
}

GradList ConvolutionBackward(const TensorBase& grad,
                             const ConvolutionSaved& saved) {
  return GradListOf(
      ops::Conv2dBackward(grad, saved.input.get(), saved.weight.get(),
                          saved.input_shape, saved.weight_shape, saved.window,
                          saved.need_bias),
      saved.need_bias);
}

// SavedFor() is what the node of a convolution of `input` with `kernel`
// keeps for its backward (ConvolutionSaved).
ConvolutionSaved SavedFor(const TensorBase& input, const TensorBase& kernel,
                          const TensorBase& bias,
                          const Window2dGeometry& geometry) {
  return ConvolutionSaved{
      kernel.is_require_grad() ? SavedTensor(input) : SavedTensor(),
      input.is_require_grad() ? SavedTensor(kernel) : SavedTensor(),
      input.shape(),
      kernel.shape(),
      geometry,
      bias.defined() && bias.is_require_grad()};
}

// CheckChannels() aborts unless the input has the weight's input channels.
void CheckChannels(const Shape& in_shape, const Shape& w_shape) {
  KINDLING_CHECK(in_shape[1] == w_shape[1],
                 "Conv2d: input %s has %d channels, the weight %s expects %d",
                 in_shape.ToString(), in_shape[1], w_shape.ToString(),
                 w_shape[1]);
}

}  // namespace

Tensor<4> Convolve2d(const Tensor<4>& input_tensor,
                     const Tensor<4>& weight_tensor,
                     const std::optional<Tensor<1>>& bias_tensor,
                     const Window2d& window) {
  const Shape in_shape = input_tensor.shape();
  const Shape w_shape = weight_tensor.shape();
  CheckChannels(in_shape, w_shape);
  const TensorBase& input = input_tensor.base();
  const TensorBase& kernel = weight_tensor.base();
  const TensorBase bias_value =
      bias_tensor.has_value() ? bias_tensor->base() : TensorBase();
  const Window2dGeometry geometry = window.Geometry();
  std::vector<TensorBase> inputs = {input, kernel};
  if (bias_value.defined()) inputs.push_back(bias_value);
  if (!autodiff::ShouldRecord(inputs)) {
    return Tensor<4>(ops::Conv2d(input, kernel, bias_value, geometry));
  }
  TensorBase output = autodiff::Untracked(
      [&] { return ops::Conv2d(input, kernel, bias_value, geometry); });
  ConvolutionSaved saved = SavedFor(input, kernel, bias_value, geometry);
  return Tensor<4>(
      autodiff::Record("conv2d", inputs, std::move(output),
                       [saved = std::move(saved)](const TensorBase& grad) {
                         return ConvolutionBackward(grad, saved);
                       }));
}

Tensor<4> Conv2d::Forward(const Tensor<4>& input) const {
  // The weight's shape is checked against the input before a lazy weight
  // initializes.
  CheckChannels(input.shape(), weight.lazy_shape());
  return Convolve2d(
      input, *weight,
      bias.has_value() ? std::optional<Tensor<1>>(**bias) : std::nullopt,
      window);
}

Tensor<4> Conv2d::ForwardMaxPool(const Tensor<4>& input_tensor,
                                 const MaxPool2d& pool,
                                 PoolActivation activation) const {
  CheckChannels(input_tensor.shape(), weight.lazy_shape());
  const TensorBase& input = input_tensor.base();
  const TensorBase& kernel = weight->base();
  const TensorBase bias_value =
      bias.has_value() ? (*bias)->base() : TensorBase();
  const Window2dGeometry geometry = window.Geometry();
  const Window2dGeometry pool_geometry = pool.window.Geometry();
  std::vector<TensorBase> inputs = {input, kernel};
  if (bias_value.defined()) inputs.push_back(bias_value);
  const bool record = autodiff::ShouldRecord(inputs);
  ops::MaxPool2dResult pooled =
      ops::Conv2dMaxPool(input, kernel, bias_value, geometry, pool_geometry,
                         /*with_argmax=*/record, activation);
  if (!record) return Tensor<4>(std::move(pooled.output));
  return Tensor<4>(autodiff::Record(
      "conv2d_max_pool", inputs, std::move(pooled.output),
      [saved = SavedFor(input, kernel, bias_value, geometry),
       argmax = std::move(pooled.argmax),
       pool_geometry](const TensorBase& grad) {
        return GradListOf(
            ops::Conv2dMaxPoolBackward(grad, argmax, saved.input.get(),
                                       saved.weight.get(), saved.input_shape,
                                       saved.weight_shape, saved.window,
                                       pool_geometry, saved.need_bias),
            saved.need_bias);
      }));
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
