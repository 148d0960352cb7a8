#include "kindling/nn/pool2d.h"

#include <cstdint>
#include <limits>
#include <ostream>
#include <utility>

#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"

namespace kindling::nn {
namespace {

// Area() is the number of cells in a window, KH * KW.
int64_t Area(const Window2d& window) {
  return window.kernel[0] * window.kernel[1];
}

// MaxPoolBackward(): grad [N, C, OH, OW] placed at each window's argmax
// entry of a zero [N, C, KH * KW, OH, OW], then summed back into the input.
TensorBase MaxPoolBackward(const TensorBase& grad, const TensorBase& argmax,
                           const Window2d& window, const Shape& input_shape) {
  const int64_t area = Area(window);
  const TensorBase entries = ops::Arange(0, static_cast<double>(area), 1,
                                         argmax.dtype(), argmax.device())
                                 .Reshape(Shape{1, 1, area, 1, 1});
  const TensorBase is_max =
      ops::Binary(BinaryOp::kEqual, argmax, entries);  // [N, C, K, OH, OW]
  const TensorBase patches_grad =
      ops::Where(is_max, grad.Unsqueeze(2),
                 ops::Full(Shape{}, 0.0, grad.dtype(), grad.device()));
  return PatchesBackward(Tensor<5>(patches_grad), window, input_shape).base();
}

// AvgPoolBackward(): grad / (KH * KW) at every entry of each window (an
// expanded view, nothing materialized), summed back into the input.
TensorBase AvgPoolBackward(const TensorBase& grad, const Window2d& window,
                           const Shape& input_shape) {
  const int64_t area = Area(window);
  const Shape& shape = grad.shape();
  const TensorBase patches_grad =
      ops::BinaryScalar(BinaryOp::kDiv, grad, static_cast<double>(area))
          .Unsqueeze(2)
          .Expand(Shape{shape[0], shape[1], area, shape[2], shape[3]});
  return PatchesBackward(Tensor<5>(patches_grad), window, input_shape).base();
}

}  // namespace

Tensor<4> MaxPool2d::Forward(const Tensor<4>& input) const {
  const double padding = -std::numeric_limits<double>::infinity();
  if (!autograd::ShouldRecord(input.base())) {
    return Patches(input, window, padding).max_dim(2).squeeze(2);
  }
  TensorBase argmax;  // [N, C, 1, OH, OW]
  TensorBase output = autograd::Untracked([&] {
    const TensorBase patches = Patches(input, window, padding).base();
    argmax = ops::Reduce(ReduceOp::kArgMax, patches, 2);
    return ops::Gather(patches, 2, argmax).Squeeze(2);
  });
  return Tensor<4>(autograd::Record(
      "max_pool2d", {input.base()}, std::move(output),
      [argmax = std::move(argmax), window = window,
       input_shape = input.shape()](const TensorBase& grad) {
        return GradList{MaxPoolBackward(grad, argmax, window, input_shape)};
      }));
}

Tensor<4> AvgPool2d::Forward(const Tensor<4>& input) const {
  if (!autograd::ShouldRecord(input.base())) {
    return Patches(input, window, 0.0).mean_dim(2).squeeze(2);
  }
  TensorBase output = autograd::Untracked([&] {
    return Patches(input, window, 0.0).mean_dim(2).squeeze(2).base();
  });
  return Tensor<4>(autograd::Record(
      "avg_pool2d", {input.base()}, std::move(output),
      [window = window, input_shape = input.shape()](const TensorBase& grad) {
        return GradList{AvgPoolBackward(grad, window, input_shape)};
      }));
}

std::ostream& operator<<(std::ostream& os, const Window2d& window) {
  return os << "kernel=[" << window.kernel[0] << ", " << window.kernel[1]
            << "] stride=[" << window.stride[0] << ", " << window.stride[1]
            << "] padding=[" << window.padding[0] << ", " << window.padding[1]
            << "] dilation=[" << window.dilation[0] << ", "
            << window.dilation[1] << "]";
}

std::ostream& operator<<(std::ostream& os, const MaxPool2d& pool) {
  return os << "MaxPool2d(" << pool.window << ")";
}

std::ostream& operator<<(std::ostream& os, const AvgPool2d& pool) {
  return os << "AvgPool2d(" << pool.window << ")";
}

}  // namespace kindling::nn
