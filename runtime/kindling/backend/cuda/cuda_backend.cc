#include "kindling/backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <type_traits>

#include "kindling/backend/cuda/cuda_allocator.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/cuda_device_memory.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/on_device.h"
#include "kindling/core/check.h"
#include "kindling/tensor/conv2d_composite.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda {

void CudaBackend::Copy(const TensorBase& out, const TensorBase& in) {
  const OnDevice on(out, in);
  CopyKernel(on.stream(), out, in);
}

void CudaBackend::Fill(const TensorBase& out, double value) {
  const OnDevice on(out);
  FillKernel(on.stream(), out, value);
}

void CudaBackend::Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
                        double arg0, double arg1) {
  const OnDevice on(out, in);
  UnaryKernel(on.stream(), op, out, in, arg0, arg1);
}

void CudaBackend::Binary(BinaryOp op, const TensorBase& out,
                         const TensorBase& lhs, const TensorBase& rhs) {
  const OnDevice on(out, lhs, rhs);
  BinaryKernel(on.stream(), op, out, lhs, rhs);
}

void CudaBackend::BinaryScalar(BinaryOp op, const TensorBase& out,
                               const TensorBase& tensor, double scalar,
                               bool scalar_is_lhs) {
  const OnDevice on(out, tensor);
  BinaryScalarKernel(on.stream(), op, out, tensor, scalar, scalar_is_lhs);
}

void CudaBackend::Where(const TensorBase& out, const TensorBase& condition,
                        const TensorBase& on_true, const TensorBase& on_false) {
  const OnDevice on(out, condition, on_true, on_false);
  WhereKernel(on.stream(), out, condition, on_true, on_false);
}

void CudaBackend::Reduce(ReduceOp op, const TensorBase& out,
                         const TensorBase& in, int axis) {
  const OnDevice on(out, in);
  ReduceKernel(on.stream(), op, out, in, axis);
}

void CudaBackend::Softmax(const TensorBase& out, const TensorBase& in, int axis,
                          bool log) {
  const OnDevice on(out, in);
  SoftmaxKernel(on.stream(), out, in, axis, log);
}

void CudaBackend::Matmul(const TensorBase& out, const TensorBase& lhs,
                         const TensorBase& rhs) {
  const OnDevice on(out, lhs, rhs);
  MatmulKernel(on.index(), on.stream(), out, lhs, rhs);
}

void CudaBackend::CheckIndices(const TensorBase& index, int64_t bound,
                               const char* op) {
  const OnDevice on(index);
  CheckIndicesKernel(on.stream(), index, bound,
                     IndexFaultSinkFor(on.index(), op));
}

void CudaBackend::IndexSelect(const TensorBase& out, const TensorBase& in,
                              int axis, const TensorBase& index) {
  const OnDevice on(out, in, index);
  IndexSelectKernel(on.stream(), out, in, axis, index,
                    IndexFaultSinkFor(on.index(), "index_select"));
}

void CudaBackend::Gather(const TensorBase& out, const TensorBase& in, int axis,
                         const TensorBase& index) {
  const OnDevice on(out, in, index);
  GatherKernel(on.stream(), out, in, axis, index,
               IndexFaultSinkFor(on.index(), "gather"));
}

void CudaBackend::FillRandom(const TensorBase& out,
                             RandomDistribution distribution, uint64_t seed,
                             uint64_t offset, double a, double b) {
  const OnDevice on(out);
  FillRandomKernel(on.stream(), out, distribution, seed, offset, a, b);
}

void CudaBackend::Dropout(const TensorBase& out, const TensorBase& in,
                          double prob, uint64_t seed, uint64_t offset) {
  const OnDevice on(out, in);
  DropoutKernel(on.stream(), out, in, prob, seed, offset);
}

double CudaBackend::AbsPowerSum(const TensorBase& in, double p) {
  const OnDevice on(in);
  return AbsPowerSumKernel(on.stream(), in, p);
}

void CudaBackend::ScaleClamp(const TensorBase& inout, double scale,
                             double max_abs) {
  const OnDevice on(inout);
  ScaleClampKernel(on.stream(), inout, scale, max_abs);
}

void CudaBackend::ScatterAdd(const TensorBase& out, int axis,
                             const TensorBase& index, const TensorBase& src) {
  const OnDevice on(out, index, src);
  ScatterAddKernel(on.stream(), out, axis, index, src,
                   IndexFaultSinkFor(on.index(), "scatter_add"));
}

void CudaBackend::Im2Col(const TensorBase& columns, const TensorBase& input,
                         const Window2dGeometry& window, double pad_value) {
  const OnDevice on(columns, input);
  Im2ColKernel(on.stream(), columns, input, window, pad_value);
}

void CudaBackend::Col2Im(const TensorBase& input_grad,
                         const TensorBase& columns,
                         const Window2dGeometry& window) {
  const OnDevice on(input_grad, columns);
  Col2ImKernel(on.stream(), input_grad, columns, window);
}

void CudaBackend::MaxPool2d(const TensorBase& out, const TensorBase& argmax,
                            const TensorBase& input,
                            const Window2dGeometry& window,
                            PoolActivation activation) {
  const OnDevice on(out, argmax, input);
  MaxPool2dKernel(on.stream(), out, argmax, input, window, activation);
}

void CudaBackend::MaxPool2dBackward(const TensorBase& input_grad,
                                    const TensorBase& grad,
                                    const TensorBase& argmax,
                                    const Window2dGeometry& window) {
  const OnDevice on(input_grad, grad, argmax);
  MaxPool2dBackwardKernel(on.stream(), input_grad, grad, argmax, window);
}

void CudaBackend::Conv2d(const TensorBase& out, const TensorBase& input,
                         const TensorBase& weight, const TensorBase& bias,
                         const Window2dGeometry& window) {
  ComposedConv2d(*this, out, input, weight, bias, window);
}

void CudaBackend::Conv2dBackward(const TensorBase& input_grad,
                                 const TensorBase& weight_grad,
                                 const TensorBase& bias_grad,
                                 const TensorBase& grad,
                                 const TensorBase& input,
                                 const TensorBase& weight,
                                 const Window2dGeometry& window) {
  ComposedConv2dBackward(*this, input_grad, weight_grad, bias_grad, grad, input,
                         weight, window);
}

void CudaBackend::LayerNorm(const TensorBase& out, const TensorBase& mean,
                            const TensorBase& rstd, const TensorBase& input,
                            const TensorBase& gamma, const TensorBase& beta,
                            double epsilon) {
  const OnDevice on(out, mean, rstd, input, gamma, beta);
  LayerNormKernel(on.stream(), out, mean, rstd, input, gamma, beta, epsilon);
}

void CudaBackend::LayerNormBackward(
    const TensorBase& input_grad, const TensorBase& gamma_grad,
    const TensorBase& beta_grad, const TensorBase& grad,
    const TensorBase& input, const TensorBase& mean, const TensorBase& rstd,
    const TensorBase& gamma) {
  const OnDevice on(grad, input_grad, gamma_grad, beta_grad, input, mean, rstd,
                    gamma);
  LayerNormBackwardKernel(on.stream(), input_grad, gamma_grad, beta_grad, grad,
                          input, mean, rstd, gamma);
}

void RegisterCudaBackend() {
  static CudaBackend* const backend = new CudaBackend();
  RegisterBackend(DeviceKind::kCuda, backend);
}

namespace {

// Registers the backend before main() in every program that links this
// library (alwayslink keeps this object file in the link). Registration
// touches no CUDA API, so it is safe on machines without a GPU.
const bool kRegistered = [] {
  RegisterCudaBackend();
  return true;
}();

}  // namespace
}  // namespace kindling::cuda
