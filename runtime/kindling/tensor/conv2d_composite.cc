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
  if (input_grad.defined()) {
    const TensorBase column_grad =
        ops::Matmul(KernelMatrix(weight).Transpose(0, 1), grad_matrix);
    backend.Copy(input_grad,
                 ops::Col2Im(column_grad, window, input_grad.shape()));
  }
  if (weight_grad.defined()) {
    const TensorBase columns = ops::Im2Col(input, window, 0.0);
    backend.Copy(weight_grad, ops::Matmul(grad_matrix, columns.Transpose(0, 1))
                                  .Reshape(weight_grad.shape()));
  }
  if (bias_grad.defined()) {
    backend.Copy(
        bias_grad,
        ops::Reduce(ReduceOp::kSum, grad_matrix, 1).Reshape(bias_grad.shape()));
  }
}

}  // namespace kindling
