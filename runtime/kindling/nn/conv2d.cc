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

// Whole-batch convolution as one GEMM (shapes: input [N, C, H, W], weight
// [O, C, KH, KW], K = KH * KW, L = OH * OW):
//   columns [C*K, N*L] = Im2Col(input)
//   out     [O, N*L]   = weight [O, C*K] x columns
// then one pass permutes [O, N, L] to the NCHW output while adding the bias.
// One large GEMM keeps BLAS at full speed where N GEMMs of [O, L] would not,
// and makes the weight gradient one GEMM too (no per-example products to
// sum).

// ConvolutionForward: the output and the im2col columns the weight's
// gradient needs.
struct ConvolutionForward {
  TensorBase output;   // [N, out, OH, OW]
  TensorBase columns;  // [in * KH * KW, N * OH * OW]
};

// kSwapBatchAndChannels: [N, O, ..] <-> [O, N, ..] (its own inverse).
constexpr int kSwapBatchAndChannels[] = {1, 0, 2, 3};

ConvolutionForward Convolve(const TensorBase& input, const TensorBase& weight,
                            const TensorBase& bias, const Window2d& window) {
  const int64_t batch = input.shape()[0];
  const int64_t out_channels = weight.shape()[0];
  const int64_t out_h = window.OutputSize(0, input.shape()[2]);
  const int64_t out_w = window.OutputSize(1, input.shape()[3]);
  ConvolutionForward result;
  result.columns = ops::Im2Col(input, window.Geometry(), 0.0);
  const TensorBase kernel =
      weight.Reshape(Shape{out_channels, weight.numel() / out_channels});
  const TensorBase output =
      ops::Matmul(kernel, result.columns)  // [O, N * L]
          .Reshape(Shape{out_channels, batch, out_h, out_w})
          .Permute(kSwapBatchAndChannels);
  result.output = bias.defined()
                      ? ops::Binary(BinaryOp::kAdd, output,
                                    bias.Reshape(Shape{1, out_channels, 1, 1}))
                      : output.Contiguous();
  return result;
}

// ConvolutionSaved: what the conv2d node keeps for its backward; each tensor
// only when the gradient that reads it is needed.
struct ConvolutionSaved {
  // The weight, checked against in-place writes before backward reads it
  // (an optimizer step taken between forward and backward); defined when
  // the input needs a gradient.
  SavedTensor weight;
  // Detached; Convolve() made it and nobody else can write it. Defined
  // when the weight needs a gradient.
  TensorBase columns;
  Shape input_shape;
  Window2d window;
  bool need_bias;
};

// ConvolutionBackward(): the gradients of Convolve() for an output gradient
// `grad` [N, O, OH, OW], through grad_matrix [O, N*L] (one permuting copy).
// The transposed operands go to the GEMMs as views (the CPU kernel hands
// them to sgemm as transposed, no copy):
//   d weight  = grad_matrix [O, N*L] x columns^T [N*L, C*K]
//   d columns = weight^T [C*K, O] x grad_matrix [O, N*L], then col2im
//   d bias    = grad_matrix summed over N*L.
GradList ConvolutionBackward(const TensorBase& grad,
                             const ConvolutionSaved& saved,
                             const Shape& weight_shape) {
  const int64_t out_channels = grad.shape()[1];
  const TensorBase grad_matrix =
      grad.Permute(kSwapBatchAndChannels)
          .Contiguous()
          .Reshape(Shape{out_channels, grad.numel() / out_channels});
  GradList grads(saved.need_bias ? 3 : 2);
  if (saved.weight.defined()) {
    const TensorBase kernel = saved.weight.get().Reshape(
        Shape{out_channels, weight_shape.num_elements() / out_channels});
    grads[0] = ops::Col2Im(ops::Matmul(kernel.Transpose(0, 1), grad_matrix),
                           saved.window.Geometry(), saved.input_shape);
  }
  if (saved.columns.defined()) {
    grads[1] = ops::Matmul(grad_matrix, saved.columns.Transpose(0, 1))
                   .Reshape(weight_shape);
  }
  if (saved.need_bias) {
    grads[2] = ops::Reduce(ReduceOp::kSum, grad_matrix, 1)
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
      input.is_require_grad() ? SavedTensor(kernel) : SavedTensor(),
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
