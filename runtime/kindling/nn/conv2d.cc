#include "kindling/nn/conv2d.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"

namespace kindling::nn {

namespace {

// ConvolutionForward: the output and the im2col columns the weight's
// gradient needs.
struct ConvolutionForward {
  TensorBase output;   // [N, out, OH, OW]
  TensorBase columns;  // [N, in * KH * KW, OH * OW]
};

ConvolutionForward Convolve(const TensorBase& input, const TensorBase& weight,
                            const TensorBase& bias, const Window2d& window) {
  const int64_t batch = input.shape()[0];
  const int64_t out_channels = weight.shape()[0];
  const int64_t window_size = weight.numel() / out_channels;
  const Tensor<5> patches = Patches(Tensor<4>(input), window, 0.0);
  const int64_t out_h = patches.dim(3);
  const int64_t out_w = patches.dim(4);
  ConvolutionForward result;
  result.columns =
      patches.base().Reshape(Shape{batch, window_size, out_h * out_w});
  const TensorBase kernel = weight.Reshape(Shape{out_channels, window_size});
  TensorBase output = ops::Matmul(kernel, result.columns);  // [N, out, L]
  if (bias.defined()) {
    output = ops::Binary(BinaryOp::kAdd, output,
                         bias.Reshape(Shape{out_channels, 1}));
  }
  result.output = output.Reshape(Shape{batch, out_channels, out_h, out_w});
  return result;
}

// ConvolutionSaved: what the conv2d node keeps for its backward; each tensor
// only when the gradient that reads it is needed.
struct ConvolutionSaved {
  TensorBase weight;   // detached; defined when the input needs a gradient
  TensorBase columns;  // detached; defined when the weight needs one
  Shape input_shape;
  Window2d window;
  bool need_bias;
};

// ConvolutionBackward(): the gradients of Convolve() for an output gradient
// `grad` [N, out, OH, OW]. Every GEMM takes its transposed operand as a view
// (the CPU kernel hands it to sgemm as transposed, no copy):
//   d weight  = sum_n grad[n] [out, L] x columns[n]^T [L, in*K]
//   d columns = weight^T [in*K, out] x grad[n] [out, L], then col2im
//   d bias    = sum over n and L of grad.
GradList ConvolutionBackward(const TensorBase& grad,
                             const ConvolutionSaved& saved,
                             const Shape& weight_shape) {
  const int64_t batch = grad.shape()[0];
  const int64_t out_channels = grad.shape()[1];
  const int64_t positions = grad.shape()[2] * grad.shape()[3];  // L
  const TensorBase grad_columns =
      grad.Reshape(Shape{batch, out_channels, positions});  // [N, out, L]
  GradList grads(saved.need_bias ? 3 : 2);
  if (saved.weight.defined()) {
    const TensorBase kernel = saved.weight.Reshape(
        Shape{out_channels, weight_shape.num_elements() / out_channels});
    const TensorBase d_columns =
        ops::Matmul(kernel.Transpose(0, 1), grad_columns);  // [N, in*K, L]
    const Shape& in = saved.input_shape;
    const int64_t area = saved.window.kernel[0] * saved.window.kernel[1];
    grads[0] = PatchesBackward(
                   Tensor<5>(d_columns.Reshape(Shape{
                       batch, in[1], area, grad.shape()[2], grad.shape()[3]})),
                   saved.window, in)
                   .base();
  }
  if (saved.columns.defined()) {
    const TensorBase per_example = ops::Matmul(
        grad_columns, saved.columns.Transpose(1, 2));  // [N, out, in*K]
    grads[1] =
        ops::Reduce(ReduceOp::kSum, per_example, 0).Reshape(weight_shape);
  }
  if (saved.need_bias) {
    grads[2] = ops::Reduce(ReduceOp::kSum,
                           ops::Reduce(ReduceOp::kSum, grad_columns, 2), 0)
                   .Reshape(Shape{out_channels});
  }
  return grads;
}

}  // namespace

Tensor<4> Conv2d::Forward(const Tensor<4>& input_tensor) const {
  const Shape in_shape = input_tensor.shape();
  const Shape w_shape = weight.lazy_shape();
  KINDLING_CHECK(in_shape[1] == w_shape[1],
                 "Conv2d: input %s has %d channels, the weight %s expects %d",
                 in_shape.ToString(), in_shape[1], w_shape.ToString(),
                 w_shape[1]);
  const TensorBase& input = input_tensor.base();
  const TensorBase& kernel = weight->base();
  const TensorBase bias_value =
      bias.has_value() ? (*bias)->base() : TensorBase();
  std::vector<TensorBase> inputs = {input, kernel};
  if (bias_value.defined()) inputs.push_back(bias_value);
  if (!autograd::ShouldRecord(inputs)) {
    return Tensor<4>(Convolve(input, kernel, bias_value, window).output);
  }
  ConvolutionForward forward;
  TensorBase output = autograd::Untracked([&] {
    forward = Convolve(input, kernel, bias_value, window);
    return forward.output;
  });
  ConvolutionSaved saved{
      input.is_require_grad() ? kernel.Detach() : TensorBase(),
      kernel.is_require_grad() ? forward.columns.Detach() : TensorBase(),
      in_shape, window, bias_value.is_require_grad()};
  forward = ConvolutionForward();
  return Tensor<4>(
      autograd::Record("conv2d", inputs, std::move(output),
                       [saved = std::move(saved),
                        weight_shape = w_shape](const TensorBase& grad) {
                         return ConvolutionBackward(grad, saved, weight_shape);
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
