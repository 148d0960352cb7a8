#include "kindling/tensor/window_ops.h"

#include <cstdint>

#include "kindling/core/check.h"
#include "kindling/tensor/op_checks.h"

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
  const int64_t span = window.dilation[axis] * (window.kernel[axis] - 1) + 1;
  const int64_t padded = input + 2 * window.padding[axis];
  KINDLING_CHECK(padded >= span,
                 "window: kernel span %d does not fit the padded input %d "
                 "along axis %d",
                 span, padded, axis);
  return (padded - span) / window.stride[axis] + 1;
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
                          const Window2dGeometry& window, bool with_argmax) {
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
                   window);
  }
  result.output = result.output.To(input.dtype());
  return result;
}

TensorBase MaxPool2dBackward(const TensorBase& grad, const TensorBase& argmax,
                             const Shape& input_shape) {
  CheckImages(grad, "max_pool2d backward");
  CheckDefined(argmax, "max_pool2d backward");
  KINDLING_CHECK(argmax.dtype() == DType::kI64 &&
                     argmax.shape() == grad.shape() && argmax.is_contiguous() &&
                     input_shape.rank() == 4 &&
                     input_shape[0] == grad.shape()[0] &&
                     input_shape[1] == grad.shape()[1],
                 "max_pool2d backward: gradient %s, argmax %s and input %s "
                 "do not match",
                 grad.shape().ToString(), argmax.shape().ToString(),
                 input_shape.ToString());
  const DType compute = ComputeDType(grad.dtype());
  TensorBase input_grad =
      TensorBase::Empty(input_shape, compute, grad.device());
  if (input_grad.numel() == 0) return input_grad.To(grad.dtype());
  GetBackend(grad.device())
      .MaxPool2dBackward(input_grad, grad.Detach().To(compute), argmax);
  return input_grad.To(grad.dtype());
}

}  // namespace kindling::ops
