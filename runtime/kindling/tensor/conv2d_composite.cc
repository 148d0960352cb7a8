#include "kindling/tensor/conv2d_composite.h"

#include <cstdint>

#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/linalg_ops.h"
#include "kindling/tensor/reduce_ops.h"
#include "kindling/tensor/window_ops.h"

namespace kindling {
namespace {

// [N, O, ...] <-> [O, N, ...]: the GEMM's output order vs NCHW.
constexpr int kSwapBatchAndChannels[] = {1, 0, 2, 3};

// KernelMatrix() is weight [O, C, KH, KW] as [O, C * K].
TensorBase KernelMatrix(const TensorBase& weight) {
  const int64_t out_channels = weight.shape()[0];
  return weight.Reshape(Shape{out_channels, weight.numel() / out_channels});
}

}  // namespace

void ComposedConv2d(Backend& backend, const TensorBase& out,
                    const TensorBase& input, const TensorBase& weight,
                    const TensorBase& bias, const Window2dGeometry& window) {
  const NoGradGuard no_grad;
  const Shape& shape = out.shape();  // [N, O, OH, OW]
  const TensorBase columns = ops::Im2Col(input, window, 0.0);
  const TensorBase product =
      ops::Matmul(KernelMatrix(weight), columns)  // [O, N * OH * OW]
          .Reshape(Shape{shape[1], shape[0], shape[2], shape[3]})
          .Permute(kSwapBatchAndChannels);
  if (bias.defined()) {
    backend.Binary(BinaryOp::kAdd, out, product,
                   bias.Reshape(Shape{1, shape[1], 1, 1}).Expand(shape));
  } else {
    backend.Copy(out, product);
  }
}

void ComposedConv2dBackward(Backend& backend, const TensorBase& input_grad,
                            const TensorBase& weight_grad,
                            const TensorBase& bias_grad, const TensorBase& grad,
                            const TensorBase& input, const TensorBase& weight,
                            const Window2dGeometry& window) {
  const NoGradGuard no_grad;
  const int64_t out_channels = grad.shape()[1];
  const TensorBase grad_matrix =  // [O, N * OH * OW]
      grad.Permute(kSwapBatchAndChannels)
          .Contiguous()
          .Reshape(Shape{out_channels, grad.numel() / out_channels});
  // Each gradient is written by its last kernel straight into the caller's
  // tensor (all contiguous), with no copy.
  if (input_grad.defined() && input_grad.numel() > 0) {
    const Shape& shape = input_grad.shape();  // [N, C, H, W]
    const int64_t area = window.kernel[0] * window.kernel[1];
    const TensorBase column_grad =  // [C * K, N * OH * OW]
        ops::Matmul(KernelMatrix(weight).Transpose(0, 1), grad_matrix);
    const int kColumnsAsCol2ImView[] = {2, 0, 1, 3, 4};
    backend.Col2Im(input_grad,
                   column_grad
                       .Reshape(Shape{shape[1], area, shape[0], grad.shape()[2],
                                      grad.shape()[3]})
                       .Permute(kColumnsAsCol2ImView),
                   window);
  }
  if (weight_grad.defined()) {
    const TensorBase columns = ops::Im2Col(input, window, 0.0);
    backend.Matmul(KernelMatrix(weight_grad), grad_matrix,
                   columns.Transpose(0, 1));
  }
  if (bias_grad.defined()) {
    backend.Reduce(ReduceOp::kSum, bias_grad.Reshape(Shape{out_channels, 1}),
                   grad_matrix, 1);
  }
}

}  // namespace kindling
