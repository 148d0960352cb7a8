#include "kindling/nn/pool2d.h"

#include <cstdint>
#include <ostream>
#include <utility>

#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/window_ops.h"

namespace kindling::nn {
namespace {

// Area() is the number of cells in a window, KH * KW.
int64_t Area(const Window2d& window) {
  return window.kernel[0] * window.kernel[1];
}

// AvgPoolBackward(): grad / (KH * KW) at every entry of each window (an
// expanded view, packed once by PatchesBackward), summed back into the
// input.
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
  return Pool(input, PoolActivation::kNone, "max_pool2d");
}

Tensor<4> MaxPool2d::ForwardRelu(const Tensor<4>& input) const {
  return Pool(input, PoolActivation::kRelu, "max_pool2d_relu");
}

Tensor<4> MaxPool2d::Pool(const Tensor<4>& input, PoolActivation activation,
                          const char* name) const {
  const bool record = autodiff::ShouldRecord(input.base());
  ops::MaxPool2dResult pooled = ops::MaxPool2d(
      input.base(), window.Geometry(), /*with_argmax=*/record, activation);
  if (!record) return Tensor<4>(pooled.output);
  return Tensor<4>(autodiff::Record(
      name, {input.base()}, std::move(pooled.output),
      [argmax = std::move(pooled.argmax), input_shape = input.shape(),
       geometry = window.Geometry()](const TensorBase& grad) {
        return GradList{
            ops::MaxPool2dBackward(grad, argmax, input_shape, geometry)};
      }));
}

Tensor<4> AvgPool2d::Forward(const Tensor<4>& input) const {
  if (!autodiff::ShouldRecord(input.base())) {
    return Patches(input, window, 0.0).mean_dim(2).squeeze(2);
  }
  TensorBase output = autodiff::Untracked([&] {
    return Patches(input, window, 0.0).mean_dim(2).squeeze(2).base();
  });
  return Tensor<4>(autodiff::Record(
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
