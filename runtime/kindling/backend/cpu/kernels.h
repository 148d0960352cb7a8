// The CPU kernels behind CpuBackend, one function per Backend method. The
// contracts (shapes, dtypes, aliasing) are those of kindling/tensor/backend.h;
// the front end has already validated the operands.
#ifndef KINDLING_BACKEND_CPU_KERNELS_H_
#define KINDLING_BACKEND_CPU_KERNELS_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

// elementwise.cc
void CopyKernel(const TensorBase& out, const TensorBase& in);
void FillKernel(const TensorBase& out, double value);
void UnaryKernel(UnaryOp op, const TensorBase& out, const TensorBase& in,
                 double arg0, double arg1);
// Backend::GeluWithSlope for contiguous f32 inputs.
bool GeluWithSlopeKernel(const TensorBase& in, TensorBase* out,
                         TensorBase* slope);
void BinaryKernel(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs);
void BinaryScalarKernel(BinaryOp op, const TensorBase& out,
                        const TensorBase& tensor, double scalar,
                        bool scalar_is_lhs);
void WhereKernel(const TensorBase& out, const TensorBase& condition,
                 const TensorBase& on_true, const TensorBase& on_false);

// reduce.cc
void ReduceKernel(ReduceOp op, const TensorBase& out, const TensorBase& in,
                  int axis);

// softmax.cc
void SoftmaxKernel(const TensorBase& out, const TensorBase& in, int axis,
                   bool log);

// cross_entropy.cc: Backend::CrossEntropyBackward for f32 log-probabilities
// [R, C] (contiguous) into a contiguous out.
bool CrossEntropyBackwardKernel(const TensorBase& out,
                                const TensorBase& log_probabilities,
                                const TensorBase& labels,
                                double label_smoothing, const TensorBase& grad);

// relu_bias_backward.cc: Backend::ReluBiasBackward for f32, all four
// contiguous, [R, N] with N > 1.
bool ReluBiasBackwardKernel(const TensorBase& grad_product,
                            const TensorBase& grad_bias, const TensorBase& grad,
                            const TensorBase& out);

// matmul.cc
void MatmulKernel(const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs);
// Backend::MatmulBias for f32 and f64 products that are one GEMM (a matrix,
// or a contiguous batch times a shared matrix) into a contiguous out.
bool MatmulBiasKernel(const TensorBase& out, const TensorBase& lhs,
                      const TensorBase& rhs, const TensorBase& bias,
                      ProductActivation activation);

// index.cc
void CheckIndicesKernel(const TensorBase& index, int64_t bound, const char* op);
void IndexSelectKernel(const TensorBase& out, const TensorBase& in, int axis,
                       const TensorBase& index);
void GatherKernel(const TensorBase& out, const TensorBase& in, int axis,
                  const TensorBase& index);
void ScatterAddKernel(const TensorBase& out, int axis, const TensorBase& index,
                      const TensorBase& src);

// window.cc
void Im2ColKernel(const TensorBase& columns, const TensorBase& input,
                  const Window2dGeometry& window, double pad_value);
void Col2ImKernel(const TensorBase& input_grad, const TensorBase& columns,
                  const Window2dGeometry& window);
void MaxPool2dKernel(const TensorBase& out, const TensorBase& argmax,
                     const TensorBase& input, const Window2dGeometry& window,
                     PoolActivation activation);
void MaxPool2dBackwardKernel(const TensorBase& input_grad,
                             const TensorBase& grad, const TensorBase& argmax,
                             const Window2dGeometry& window);

// conv2d.cc
void Conv2dKernel(const TensorBase& out, const TensorBase& input,
                  const TensorBase& weight, const TensorBase& bias,
                  const Window2dGeometry& window);
void Conv2dBackwardKernel(const TensorBase& input_grad,
                          const TensorBase& weight_grad,
                          const TensorBase& bias_grad, const TensorBase& grad,
                          const TensorBase& input, const TensorBase& weight,
                          const Window2dGeometry& window);

// Backend::Conv2dMaxPool / Conv2dMaxPoolBackward with Kindling's kernels,
// one sample's convolution output at a time, pooled (or its gradient
// rebuilt) while it is in cache: the layers whose patch
// small_patch_products.h takes (one input channel), pooled 2x2 at stride 2
// over an even output side; the backward of the weight and bias only (a
// first layer's). The argmax is u8 window codes (backend.h). False, having
// written nothing, elsewhere.
bool Conv2dMaxPoolKernel(const TensorBase& out, const TensorBase& argmax,
                         const TensorBase& input, const TensorBase& weight,
                         const TensorBase& bias, const Window2dGeometry& conv,
                         const Window2dGeometry& pool,
                         PoolActivation activation);
bool Conv2dMaxPoolBackwardKernel(
    const TensorBase& input_grad, const TensorBase& weight_grad,
    const TensorBase& bias_grad, const TensorBase& pooled_grad,
    const TensorBase& argmax, const TensorBase& input, const TensorBase& weight,
    const Window2dGeometry& conv, const Window2dGeometry& pool);

// layer_norm.cc
void LayerNormKernel(const TensorBase& out, const TensorBase& mean,
                     const TensorBase& rstd, const TensorBase& input,
                     const TensorBase& gamma, const TensorBase& beta,
                     double epsilon);
void LayerNormBackwardKernel(const TensorBase& input_grad,
                             const TensorBase& gamma_grad,
                             const TensorBase& beta_grad,
                             const TensorBase& grad, const TensorBase& input,
                             const TensorBase& mean, const TensorBase& rstd,
                             const TensorBase& gamma);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_KERNELS_H_
