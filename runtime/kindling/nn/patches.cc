#include "kindling/nn/patches.h"

#include <cstdint>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/window_ops.h"

namespace kindling::nn {

Window2dGeometry Window2d::Geometry() const {
  return Window2dGeometry{kernel, stride, padding, dilation};
}

int64_t Window2d::OutputSize(int axis, int64_t input) const {
  return ops::Window2dOutputSize(Geometry(), axis, input);
}

namespace {

// The axis orders between the patches [N, C, K, OH, OW] and the columns
// matrix's [C, K, N, OH, OW] (ops::Im2Col's layout).
constexpr int kColumnsToPatches[] = {2, 0, 1, 3, 4};
constexpr int kPatchesToColumns[] = {1, 2, 0, 3, 4};

Tensor<5> PatchesForward(const Tensor<4>& input, const Window2d& window,
                         double pad_value) {
  const Shape& shape = input.shape();
  const int64_t out_h = window.OutputSize(0, shape[2]);
  const int64_t out_w = window.OutputSize(1, shape[3]);
  const int64_t area = window.kernel[0] * window.kernel[1];
  const TensorBase columns =
      ops::Im2Col(input.base(), window.Geometry(), pad_value);
  return Tensor<5>(
      columns.Reshape(Shape{shape[1], area, shape[0], out_h, out_w})
          .Permute(kColumnsToPatches));
}

}  // namespace

Tensor<5> Patches(const Tensor<4>& input, const Window2d& window,
                  double pad_value) {
  if (!autodiff::ShouldRecord(input.base())) {
    return PatchesForward(input, window, pad_value);
  }
  TensorBase patches = autodiff::Untracked(
      [&] { return PatchesForward(input, window, pad_value).base(); });
  return Tensor<5>(autodiff::Record(
      "patches", {input.base()}, std::move(patches),
      [window, input_shape = input.shape()](const TensorBase& grad) {
        return GradList{
            PatchesBackward(Tensor<5>(grad), window, input_shape).base()};
      }));
}

Tensor<4> PatchesBackward(const Tensor<5>& patches_grad, const Window2d& window,
                          const Shape& input_shape) {
  const TensorBase& grad = patches_grad.base();
  KINDLING_CHECK(
      grad.rank() == 5 && input_shape.rank() == 4 &&
          grad.shape()[0] == input_shape[0] &&
          grad.shape()[1] == input_shape[1] &&
          grad.shape()[2] == window.kernel[0] * window.kernel[1] &&
          grad.shape()[3] == window.OutputSize(0, input_shape[2]) &&
          grad.shape()[4] == window.OutputSize(1, input_shape[3]),
      "patches backward: gradient %s does not match input %s under the "
      "window",
      grad.shape().ToString(), input_shape.ToString());
  const Shape& shape = grad.shape();
  // A copy unless the gradient already has the columns' layout.
  const TensorBase columns =
      grad.Permute(kPatchesToColumns)
          .Reshape(Shape{shape[1] * shape[2], shape[0] * shape[3] * shape[4]});
  return Tensor<4>(ops::Col2Im(columns, window.Geometry(), input_shape));
}

}  // namespace kindling::nn
