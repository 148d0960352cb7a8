// ComposedConv2d and ComposedConv2dBackward: Backend::Conv2d and
// Conv2dBackward (backend.h) written with the backend's own im2col, GEMM,
// col2im, copy and reduce kernels: the whole batch's columns
// [C * K, N * OH * OW] and one GEMM. For a backend without a fused
// convolution (the CUDA backend, where one big GEMM is what the device wants)
// and as an independent reference for a fused one in tests.
//
//   void MyBackend::Conv2d(const TensorBase& out, ...) {
//     ComposedConv2d(*this, out, input, weight, bias, window);
//   }
#ifndef KINDLING_TENSOR_CONV2D_COMPOSITE_H_
#define KINDLING_TENSOR_CONV2D_COMPOSITE_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// Same contract as Backend::Conv2d, run on `backend`.
void ComposedConv2d(Backend& backend, const TensorBase& out,
                    const TensorBase& input, const TensorBase& weight,
                    const TensorBase& bias, const Window2dGeometry& window);

// Same contract as Backend::Conv2dBackward, run on `backend`.
void ComposedConv2dBackward(Backend& backend, const TensorBase& input_grad,
                            const TensorBase& weight_grad,
                            const TensorBase& bias_grad, const TensorBase& grad,
                            const TensorBase& input, const TensorBase& weight,
                            const Window2dGeometry& window);

}  // namespace kindling

#endif  // KINDLING_TENSOR_CONV2D_COMPOSITE_H_
