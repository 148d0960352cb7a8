#include "kindling/backend/cpu/cpu_backend.h"

#include "kindling/backend/cpu/clip_kernels.h"
#include "kindling/backend/cpu/cpu_device_memory.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/backend/cpu/random.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

void CpuBackend::Copy(const TensorBase& out, const TensorBase& in) {
  CopyKernel(out, in);
}

void CpuBackend::Fill(const TensorBase& out, double value) {
  FillKernel(out, value);
}

void CpuBackend::Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
                       double arg0, double arg1) {
  UnaryKernel(op, out, in, arg0, arg1);
}

bool CpuBackend::GeluWithSlope(const TensorBase& in, TensorBase* out,
                               TensorBase* slope) {
  return GeluWithSlopeKernel(in, out, slope);
}

void CpuBackend::Binary(BinaryOp op, const TensorBase& out,
                        const TensorBase& lhs, const TensorBase& rhs) {
  BinaryKernel(op, out, lhs, rhs);
}

void CpuBackend::BinaryScalar(BinaryOp op, const TensorBase& out,
                              const TensorBase& tensor, double scalar,
                              bool scalar_is_lhs) {
  BinaryScalarKernel(op, out, tensor, scalar, scalar_is_lhs);
}

void CpuBackend::Where(const TensorBase& out, const TensorBase& condition,
                       const TensorBase& on_true, const TensorBase& on_false) {
  WhereKernel(out, condition, on_true, on_false);
}

void CpuBackend::Reduce(ReduceOp op, const TensorBase& out,
                        const TensorBase& in, int axis) {
  ReduceKernel(op, out, in, axis);
}

void CpuBackend::Softmax(const TensorBase& out, const TensorBase& in, int axis,
                         bool log) {
  SoftmaxKernel(out, in, axis, log);
}

bool CpuBackend::CrossEntropyBackward(const TensorBase& out,
                                      const TensorBase& log_probabilities,
                                      const TensorBase& labels,
                                      double label_smoothing,
                                      const TensorBase& grad) {
  return CrossEntropyBackwardKernel(out, log_probabilities, labels,
                                    label_smoothing, grad);
}

bool CpuBackend::ReluBiasBackward(const TensorBase& grad_product,
                                  const TensorBase& grad_bias,
                                  const TensorBase& grad,
                                  const TensorBase& out) {
  return ReluBiasBackwardKernel(grad_product, grad_bias, grad, out);
}

void CpuBackend::Matmul(const TensorBase& out, const TensorBase& lhs,
                        const TensorBase& rhs) {
  MatmulKernel(out, lhs, rhs);
}

bool CpuBackend::MatmulBias(const TensorBase& out, const TensorBase& lhs,
                            const TensorBase& rhs, const TensorBase& bias,
                            ProductActivation activation) {
  return MatmulBiasKernel(out, lhs, rhs, bias, activation);
}

void CpuBackend::CheckIndices(const TensorBase& index, int64_t bound,
                              const char* op) {
  CheckIndicesKernel(index, bound, op);
}

void CpuBackend::IndexSelect(const TensorBase& out, const TensorBase& in,
                             int axis, const TensorBase& index) {
  IndexSelectKernel(out, in, axis, index);
}

void CpuBackend::Gather(const TensorBase& out, const TensorBase& in, int axis,
                        const TensorBase& index) {
  GatherKernel(out, in, axis, index);
}

void CpuBackend::FillRandom(const TensorBase& out,
                            RandomDistribution distribution, uint64_t seed,
                            uint64_t offset, double a, double b) {
  FillRandomKernel(out, distribution, seed, offset, a, b);
}

void CpuBackend::Dropout(const TensorBase& out, const TensorBase& in,
                         double prob, uint64_t seed, uint64_t offset) {
  DropoutKernel(out, in, prob, seed, offset);
}

double CpuBackend::AbsPowerSum(const TensorBase& in, double p) {
  return AbsPowerSumKernel(in, p);
}

void CpuBackend::ScaleClamp(const TensorBase& inout, double scale,
                            double max_abs) {
  ScaleClampKernel(inout, scale, max_abs);
}

void CpuBackend::ScatterAdd(const TensorBase& out, int axis,
                            const TensorBase& index, const TensorBase& src) {
  ScatterAddKernel(out, axis, index, src);
}

void CpuBackend::Im2Col(const TensorBase& columns, const TensorBase& input,
                        const Window2dGeometry& window, double pad_value) {
  Im2ColKernel(columns, input, window, pad_value);
}

void CpuBackend::Col2Im(const TensorBase& input_grad, const TensorBase& columns,
                        const Window2dGeometry& window) {
  Col2ImKernel(input_grad, columns, window);
}

void CpuBackend::MaxPool2d(const TensorBase& out, const TensorBase& argmax,
                           const TensorBase& input,
                           const Window2dGeometry& window,
                           PoolActivation activation) {
  MaxPool2dKernel(out, argmax, input, window, activation);
}

void CpuBackend::MaxPool2dBackward(const TensorBase& input_grad,
                                   const TensorBase& grad,
                                   const TensorBase& argmax,
                                   const Window2dGeometry& window) {
  MaxPool2dBackwardKernel(input_grad, grad, argmax, window);
}

void CpuBackend::Conv2d(const TensorBase& out, const TensorBase& input,
                        const TensorBase& weight, const TensorBase& bias,
                        const Window2dGeometry& window) {
  // oneDNN where it measured faster than Conv2dKernel (benches/conv_bench:
  // 0.72x its time on the example CNN's conv2 forward, 0.79x backward; a CNN
  // epoch 0.91x); it declines the rest (onednn_conv2d.h says which).
  if (OneDnnConv2d(out, input, weight, bias, window)) return;
  Conv2dKernel(out, input, weight, bias, window);
}

void CpuBackend::Conv2dBackward(const TensorBase& input_grad,
                                const TensorBase& weight_grad,
                                const TensorBase& bias_grad,
                                const TensorBase& grad, const TensorBase& input,
                                const TensorBase& weight,
                                const Window2dGeometry& window) {
  if (OneDnnConv2dBackward(input_grad, weight_grad, bias_grad, grad, input,
                           weight, window)) {
    return;
  }
  Conv2dBackwardKernel(input_grad, weight_grad, bias_grad, grad, input, weight,
                       window);
}

bool CpuBackend::Conv2dMaxPool(const TensorBase& out, const TensorBase& argmax,
                               const TensorBase& input,
                               const TensorBase& weight, const TensorBase& bias,
                               const Window2dGeometry& conv,
                               const Window2dGeometry& pool,
                               PoolActivation activation) {
  // The argmax is written as window codes (backend.h).
  if (argmax.defined() && argmax.dtype() != DType::kU8) return false;
  // As Conv2d(): oneDNN's convolution where it takes the layer, pooled in
  // its own layout; Kindling's where oneDNN leaves the layer to it, pooled
  // a sample at a time.
  if (OneDnnConv2dMaxPool(out, argmax, input, weight, bias, conv, pool,
                          activation)) {
    return true;
  }
  return OneDnnLeavesToKindling(input.shape()) &&
         Conv2dMaxPoolKernel(out, argmax, input, weight, bias, conv, pool,
                             activation);
}

bool CpuBackend::Conv2dMaxPoolBackward(
    const TensorBase& input_grad, const TensorBase& weight_grad,
    const TensorBase& bias_grad, const TensorBase& pooled_grad,
    const TensorBase& argmax, const TensorBase& input, const TensorBase& weight,
    const Window2dGeometry& conv, const Window2dGeometry& pool) {
  if (argmax.dtype() != DType::kU8) return false;  // window codes only
  if (OneDnnConv2dMaxPoolBackward(input_grad, weight_grad, bias_grad,
                                  pooled_grad, argmax, input, weight, conv,
                                  pool)) {
    return true;
  }
  const Shape& input_shape =
      input_grad.defined() ? input_grad.shape() : input.shape();
  return OneDnnLeavesToKindling(input_shape) &&
         Conv2dMaxPoolBackwardKernel(input_grad, weight_grad, bias_grad,
                                     pooled_grad, argmax, input, weight, conv,
                                     pool);
}

void CpuBackend::LayerNorm(const TensorBase& out, const TensorBase& mean,
                           const TensorBase& rstd, const TensorBase& input,
                           const TensorBase& gamma, const TensorBase& beta,
                           double epsilon) {
  LayerNormKernel(out, mean, rstd, input, gamma, beta, epsilon);
}

void CpuBackend::LayerNormBackward(
    const TensorBase& input_grad, const TensorBase& gamma_grad,
    const TensorBase& beta_grad, const TensorBase& grad,
    const TensorBase& input, const TensorBase& mean, const TensorBase& rstd,
    const TensorBase& gamma) {
  LayerNormBackwardKernel(input_grad, gamma_grad, beta_grad, grad, input, mean,
                          rstd, gamma);
}

void RegisterCpuBackend() {
  static CpuDeviceMemory* const memory = new CpuDeviceMemory();
  static CpuBackend* const backend = new CpuBackend();
  RegisterDeviceMemory(DeviceKind::kCpu, memory);
  RegisterBackend(DeviceKind::kCpu, backend);
}

namespace {

// Registers the backend before main() in every program that links this
// library (alwayslink keeps this object file in the link).
const bool kRegistered = [] {
  RegisterCpuBackend();
  return true;
}();

}  // namespace
}  // namespace kindling::cpu
