#include "kindling/tensor/window_ops.h"

#include <cstdint>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/op_checks.h"
#include "kindling/tensor/reduce_ops.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckFloating;
using internal::ComputeDType;

namespace {

// CheckImages() aborts unless `tensor` is a defined floating [N, C, H, W].
void CheckImages(const TensorBase& tensor, const char* op) {
  CheckDefined(tensor, op);
  CheckFloating(tensor, op);
  KINDLING_CHECK(tensor.rank() == 4, "%s: needs [N, C, H, W], got %s", op,
                 tensor.shape().ToString());
}

// OutputShape() is [N, C, OH, OW] for an input of `input_shape`.
Shape OutputShape(const Shape& input_shape, const Window2dGeometry& window) {
  return Shape{input_shape[0], input_shape[1],
               Window2dOutputSize(window, 0, input_shape[2]),
               Window2dOutputSize(window, 1, input_shape[3])};
}

}  // namespace

int64_t Window2dOutputSize(const Window2dGeometry& window, int axis,
                           int64_t input) {
  KINDLING_CHECK(window.kernel[axis] > 0 && window.stride[axis] > 0 &&
                     window.dilation[axis] > 0 && window.padding[axis] >= 0,
                 "window: kernel %d, stride %d, dilation %d, padding %d along "
                 "axis %d must be positive (padding >= 0)",
                 window.kernel[axis], window.stride[axis],
                 window.dilation[axis], window.padding[axis], axis);
  const int64_t span = window.Span(axis);
  const int64_t padded = input + 2 * window.padding[axis];
  KINDLING_CHECK(padded >= span,
                 "window: kernel span %d does not fit the padded input %d "
                 "along axis %d",
                 span, padded, axis);
  return window.OutputSize(axis, input);
}

TensorBase Im2Col(const TensorBase& input, const Window2dGeometry& window,
                  double pad_value) {
  CheckImages(input, "im2col");
  const Shape& shape = input.shape();
  const Shape out = OutputShape(shape, window);
  const int64_t area = window.kernel[0] * window.kernel[1];
  const DType compute = ComputeDType(input.dtype());
  TensorBase columns =
      TensorBase::Empty(Shape{shape[1] * area, shape[0] * out[2] * out[3]},
                        compute, input.device());
  if (columns.numel() == 0) return columns.To(input.dtype());
  // The kernel writes [N, C, K, OH, OW] through a permuted view of the
  // [C, K, N, OH, OW] buffer.
  const int order[] = {2, 0, 1, 3, 4};
  const TensorBase view =
      columns.Reshape(Shape{shape[1], area, shape[0], out[2], out[3]})
          .Permute(order);
  GetBackend(input.device())
      .Im2Col(view, input.Detach().To(compute), window, pad_value);
  return columns.To(input.dtype());
}

TensorBase Col2Im(const TensorBase& columns, const Window2dGeometry& window,
                  const Shape& input_shape) {
  CheckDefined(columns, "col2im");
  CheckFloating(columns, "col2im");
  KINDLING_CHECK(input_shape.rank() == 4,
                 "col2im: input shape %s is not [N, C, H, W]",
                 input_shape.ToString());
  const Shape out = OutputShape(input_shape, window);
  const int64_t area = window.kernel[0] * window.kernel[1];
  KINDLING_CHECK(columns.rank() == 2 &&
                     columns.shape()[0] == input_shape[1] * area &&
                     columns.shape()[1] == input_shape[0] * out[2] * out[3],
                 "col2im: columns %s do not match input %s under a %dx%d "
                 "window with %dx%d positions",
                 columns.shape().ToString(), input_shape.ToString(),
                 window.kernel[0], window.kernel[1], out[2], out[3]);
  const DType compute = ComputeDType(columns.dtype());
  TensorBase input_grad =
      TensorBase::Empty(input_shape, compute, columns.device());
  if (input_grad.numel() == 0) return input_grad.To(columns.dtype());
  const int order[] = {2, 0, 1, 3, 4};
  const TensorBase view =
      columns.Detach()
          .To(compute)
          .Reshape(Shape{input_shape[1], area, input_shape[0], out[2], out[3]})
          .Permute(order);
  GetBackend(columns.device()).Col2Im(input_grad, view, window);
  return input_grad.To(columns.dtype());
}

MaxPool2dResult MaxPool2d(const TensorBase& input,
                          const Window2dGeometry& window, bool with_argmax,
                          PoolActivation activation) {
  CheckImages(input, "max_pool2d");
  const Shape out = OutputShape(input.shape(), window);
  const DType compute = ComputeDType(input.dtype());
  MaxPool2dResult result;
  result.output = TensorBase::Empty(out, compute, input.device());
  if (with_argmax) {
    result.argmax = TensorBase::Empty(out, DType::kI64, input.device());
  }
  if (result.output.numel() > 0) {
    GetBackend(input.device())
        .MaxPool2d(result.output, result.argmax, input.Detach().To(compute),
                   window, activation);
  }
  result.output = result.output.To(input.dtype());
  return result;
}

TensorBase MaxPool2dBackward(const TensorBase& grad, const TensorBase& argmax,
                             const Shape& input_shape,
                             const Window2dGeometry& window) {
  CheckImages(grad, "max_pool2d backward");
  CheckDefined(argmax, "max_pool2d backward");
  KINDLING_CHECK(argmax.dtype() == DType::kI64 &&
                     argmax.shape() == grad.shape() && argmax.is_contiguous() &&
                     input_shape.rank() == 4 &&
                     OutputShape(input_shape, window) == grad.shape(),
                 "max_pool2d backward: gradient %s, argmax %s and input %s "
                 "do not match the window (kernel %dx%d, stride %dx%d)",
                 grad.shape().ToString(), argmax.shape().ToString(),
                 input_shape.ToString(), window.kernel[0], window.kernel[1],
                 window.stride[0], window.stride[1]);
  const DType compute = ComputeDType(grad.dtype());
  TensorBase input_grad =
      TensorBase::Empty(input_shape, compute, grad.device());
  if (input_grad.numel() == 0) return input_grad.To(grad.dtype());
  GetBackend(grad.device())
      .MaxPool2dBackward(input_grad, grad.Detach().To(compute), argmax, window);
  return input_grad.To(grad.dtype());
}

namespace {

// CheckConvolution() aborts unless input [N, C, H, W], weight
// [O, C, KH, KW] with window.kernel == {KH, KW}, and `bias_shape` [O] (when
// `with_bias`) fit together.
void CheckConvolution(const Shape& input, const Shape& weight,
                      const Shape& bias, bool with_bias,
                      const Window2dGeometry& window, const char* op) {
  KINDLING_CHECK(weight.rank() == 4 && input.rank() == 4 &&
                     weight[1] == input[1] && weight[2] == window.kernel[0] &&
                     weight[3] == window.kernel[1],
                 "%s: weight %s does not fit input %s under a %dx%d kernel "
                 "(needs [O, C, KH, KW] with C = the input's channels)",
                 op, weight.ToString(), input.ToString(), window.kernel[0],
                 window.kernel[1]);
  KINDLING_CHECK(!with_bias || (bias.rank() == 1 && bias[0] == weight[0]),
                 "%s: bias %s does not match the %d output channels of "
                 "weight %s",
                 op, bias.ToString(), weight[0], weight.ToString());
}

// CheckSameKind() aborts unless `other` has `reference`'s dtype and device.
void CheckSameKind(const TensorBase& reference, const TensorBase& other,
                   const char* what, const char* op) {
  KINDLING_CHECK(
      other.dtype() == reference.dtype() &&
          other.device() == reference.device(),
      "%s: %s is %s on %s, the input %s on %s", op, what,
      std::string(DTypeName(other.dtype())), other.device().ToString(),
      std::string(DTypeName(reference.dtype())), reference.device().ToString());
}

// Prepared() is what a backend's convolution reads: detached, in the
// compute dtype, contiguous where `contiguous` (undefined stays undefined).
TensorBase Prepared(const TensorBase& tensor, DType compute, bool contiguous) {
  if (!tensor.defined()) return tensor;
  const TensorBase converted = tensor.Detach().To(compute);
  return contiguous ? converted.Contiguous() : converted;
}

// ConvolutionOutput() is the output shape of the convolution of `input`
// with `weight` (and `bias`) over `window`; aborts naming `op` unless they
// fit together.
Shape ConvolutionOutput(const TensorBase& input, const TensorBase& weight,
                        const TensorBase& bias, const Window2dGeometry& window,
                        const char* op) {
  CheckImages(input, op);
  CheckDefined(weight, op);
  CheckSameKind(input, weight, "weight", op);
  if (bias.defined()) CheckSameKind(input, bias, "bias", op);
  CheckConvolution(input.shape(), weight.shape(),
                   bias.defined() ? bias.shape() : Shape{}, bias.defined(),
                   window, op);
  const Shape& in = input.shape();
  return Shape{in[0], weight.shape()[0], Window2dOutputSize(window, 0, in[2]),
               Window2dOutputSize(window, 1, in[3])};
}

// CheckBackwardOperands() aborts, naming `op`, unless a convolution
// backward's operands fit together (the gradient [N, C, H, W], the input and
// weight shapes with the window, the tensors' dtypes and devices), and
// returns the convolution's output shape.
Shape CheckBackwardOperands(const TensorBase& grad, const TensorBase& input,
                            const TensorBase& weight, const Shape& input_shape,
                            const Shape& weight_shape,
                            const Window2dGeometry& window, bool with_bias,
                            const char* op) {
  CheckImages(grad, op);
  CheckConvolution(input_shape, weight_shape, Shape{weight_shape[0]}, with_bias,
                   window, op);
  if (input.defined()) CheckSameKind(grad, input, "input", op);
  if (weight.defined()) CheckSameKind(grad, weight, "weight", op);
  return Shape{input_shape[0], weight_shape[0],
               Window2dOutputSize(window, 0, input_shape[2]),
               Window2dOutputSize(window, 1, input_shape[3])};
}

// EmptyGradients() allocates what Conv2dBackward() returns: the input's
// gradient when `weight` is given, the weight's when `input` is, the bias's
// when `with_bias`.
Conv2dGradients EmptyGradients(const TensorBase& input,
                               const TensorBase& weight,
                               const Shape& input_shape,
                               const Shape& weight_shape, bool with_bias,
                               DType compute, const Device& device) {
  Conv2dGradients grads;
  if (weight.defined()) {
    grads.input = TensorBase::Empty(input_shape, compute, device);
  }
  if (input.defined()) {
    grads.weight = TensorBase::Empty(weight_shape, compute, device);
  }
  if (with_bias) {
    grads.bias = TensorBase::Empty(Shape{weight_shape[0]}, compute, device);
  }
  return grads;
}

// InDType() converts each defined gradient to `dtype`.
Conv2dGradients InDType(Conv2dGradients grads, DType dtype) {
  for (TensorBase* g : {&grads.input, &grads.weight, &grads.bias}) {
    if (g->defined()) *g = g->To(dtype);
  }
  return grads;
}

}  // namespace

TensorBase Conv2d(const TensorBase& input, const TensorBase& weight,
                  const TensorBase& bias, const Window2dGeometry& window) {
  const Shape out = ConvolutionOutput(input, weight, bias, window, "conv2d");
  const DType compute = ComputeDType(input.dtype());
  TensorBase output = TensorBase::Empty(out, compute, input.device());
  if (output.numel() > 0) {
    GetBackend(input.device())
        .Conv2d(output, Prepared(input, compute, false),
                Prepared(weight, compute, true), Prepared(bias, compute, true),
                window);
  }
  return output.To(input.dtype());
}

Conv2dGradients Conv2dBackward(const TensorBase& grad, const TensorBase& input,
                               const TensorBase& weight,
                               const Shape& input_shape,
                               const Shape& weight_shape,
                               const Window2dGeometry& window, bool with_bias) {
  const Shape expected =
      CheckBackwardOperands(grad, input, weight, input_shape, weight_shape,
                            window, with_bias, "conv2d backward");
  KINDLING_CHECK(grad.shape() == expected,
                 "conv2d backward: gradient %s, expected %s for input %s and "
                 "weight %s",
                 grad.shape().ToString(), expected.ToString(),
                 input_shape.ToString(), weight_shape.ToString());
  const DType compute = ComputeDType(grad.dtype());
  const Device device = grad.device();
  Conv2dGradients grads = EmptyGradients(
      input, weight, input_shape, weight_shape, with_bias, compute, device);
  Backend& backend = GetBackend(device);
  if (grad.numel() == 0) {
    // No output: every gradient is zero.
    for (TensorBase* g : {&grads.input, &grads.weight, &grads.bias}) {
      if (g->defined() && g->numel() > 0) backend.Fill(*g, 0.0);
    }
  } else if (grads.input.defined() || grads.weight.defined()) {
    backend.Conv2dBackward(grads.input, grads.weight, grads.bias,
                           Prepared(grad, compute, true),
                           Prepared(input, compute, false),
                           Prepared(weight, compute, true), window);
  } else if (with_bias) {
    // Only the bias: the gradient summed over everything but the channel.
    const TensorBase per_sample =
        Reduce(ReduceOp::kSum,
               grad.Detach().To(compute).Reshape(
                   Shape{expected[0], expected[1], expected[2] * expected[3]}),
               2);
    grads.bias =
        Reduce(ReduceOp::kSum, per_sample, 0).Reshape(Shape{weight_shape[0]});
  }
  return InDType(std::move(grads), grad.dtype());
}

MaxPool2dResult Conv2dMaxPool(const TensorBase& input, const TensorBase& weight,
                              const TensorBase& bias,
                              const Window2dGeometry& conv,
                              const Window2dGeometry& pool, bool with_argmax,
                              PoolActivation activation) {
  const Shape convolved =
      ConvolutionOutput(input, weight, bias, conv, "conv2d_max_pool");
  const Shape pooled = OutputShape(convolved, pool);
  const DType compute = ComputeDType(input.dtype());
  MaxPool2dResult result;
  result.output = TensorBase::Empty(pooled, compute, input.device());
  if (with_argmax) {
    result.argmax = TensorBase::Empty(pooled, DType::kU8, input.device());
  }
  if (result.output.numel() > 0 &&
      GetBackend(input.device())
          .Conv2dMaxPool(
              result.output, result.argmax, Prepared(input, compute, false),
              Prepared(weight, compute, true), Prepared(bias, compute, true),
              conv, pool, activation)) {
    result.output = result.output.To(input.dtype());
    return result;
  }
  return MaxPool2d(Conv2d(input, weight, bias, conv), pool, with_argmax,
                   activation);
}

Conv2dGradients Conv2dMaxPoolBackward(
    const TensorBase& grad, const TensorBase& argmax, const TensorBase& input,
    const TensorBase& weight, const Shape& input_shape,
    const Shape& weight_shape, const Window2dGeometry& conv,
    const Window2dGeometry& pool, bool with_bias) {
  const Shape convolved =
      CheckBackwardOperands(grad, input, weight, input_shape, weight_shape,
                            conv, with_bias, "conv2d_max_pool backward");
  CheckDefined(argmax, "conv2d_max_pool backward");
  KINDLING_CHECK(
      (argmax.dtype() == DType::kU8 || argmax.dtype() == DType::kI64) &&
          argmax.shape() == grad.shape() && argmax.is_contiguous() &&
          OutputShape(convolved, pool) == grad.shape(),
      "conv2d_max_pool backward: gradient %s and argmax %s do not "
      "match the pooled convolution of input %s with weight %s",
      grad.shape().ToString(), argmax.shape().ToString(),
      input_shape.ToString(), weight_shape.ToString());
  const DType compute = ComputeDType(grad.dtype());
  // An i64 argmax means the backend declined the fused forward: it has no
  // fused backward for these operands either.
  if (argmax.dtype() == DType::kU8 && grad.numel() > 0 &&
      (input.defined() || weight.defined())) {
    Conv2dGradients grads =
        EmptyGradients(input, weight, input_shape, weight_shape, with_bias,
                       compute, grad.device());
    if (GetBackend(grad.device())
            .Conv2dMaxPoolBackward(grads.input, grads.weight, grads.bias,
                                   Prepared(grad, compute, true), argmax,
                                   Prepared(input, compute, false),
                                   Prepared(weight, compute, true), conv,
                                   pool)) {
      return InDType(std::move(grads), grad.dtype());
    }
  }
  const TensorBase cells = argmax.dtype() == DType::kU8
                               ? WindowCodesToCells(argmax, convolved, pool)
                               : argmax;
  return Conv2dBackward(MaxPool2dBackward(grad, cells, convolved, pool), input,
                        weight, input_shape, weight_shape, conv, with_bias);
}

TensorBase WindowCodesToCells(const TensorBase& codes, const Shape& input_shape,
                              const Window2dGeometry& window) {
  CheckDefined(codes, "window codes");
  KINDLING_CHECK(codes.dtype() == DType::kU8 && input_shape.rank() == 4 &&
                     codes.shape() == OutputShape(input_shape, window),
                 "window codes: %s %s are not the codes of a pool over %s",
                 std::string(DTypeName(codes.dtype())),
                 codes.shape().ToString(), input_shape.ToString());
  // Codes come from a CPU kernel; read and convert them on the host.
  const TensorBase host = codes.ToDevice(Device::Cpu()).Contiguous();
  TensorBase cells =
      TensorBase::Empty(codes.shape(), DType::kI64, Device::Cpu());
  const uint8_t* code = host.data_as<const uint8_t>();
  int64_t* cell = cells.data_as<int64_t>();
  const int64_t height = input_shape[2], width = input_shape[3];
  const int64_t out_h = codes.shape()[2], out_w = codes.shape()[3];
  const int64_t planes = codes.shape()[0] * codes.shape()[1];
  for (int64_t i = 0; i < planes * out_h * out_w; ++i) {
    if (code[i] == kNoWindowCell) {
      cell[i] = -1;
      continue;
    }
    const int64_t oh = i / out_w % out_h, ow = i % out_w;
    const int64_t row = code[i] / window.kernel[1];
    const int64_t column = code[i] % window.kernel[1];
    const int64_t h =
        oh * window.stride[0] - window.padding[0] + row * window.dilation[0];
    const int64_t w =
        ow * window.stride[1] - window.padding[1] + column * window.dilation[1];
    KINDLING_CHECK(
        row < window.kernel[0] && h >= 0 && h < height && w >= 0 && w < width,
        "window codes: code %d of window (%d, %d) lies outside "
        "its %s plane",
        code[i], oh, ow, input_shape.ToString());
    cell[i] = h * width + w;
  }
  return cells.ToDevice(codes.device());
}

}  // namespace kindling::ops
