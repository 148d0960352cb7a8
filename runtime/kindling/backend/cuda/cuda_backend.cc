#include "kindling/backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <type_traits>

#include "kindling/backend/cuda/cuda_allocator.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/backend/cuda/cuda_device_memory.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/core/check.h"
#include "kindling/tensor/conv2d_composite.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cuda {
namespace {

// OnDevice: one backend call's setup, and the single place where the
// backend tells the allocator which streams use which blocks. It makes the
// device of its first tensor current and takes that device's current
// stream; every tensor the call's kernels read or write must be passed to
// it (undefined ones are skipped), and each is recorded as used on that
// stream (CudaAllocator::RecordStream). So a tensor allocated on one stream
// and used by a kernel on another is not reused, once freed, before that
// kernel has run. Costs a relaxed load per tensor when the program has only
// ever used one stream.
class OnDevice {
 public:
  template <class... Tensors>
  explicit OnDevice(const TensorBase& first, const Tensors&... rest)
      : index_(CheckedIndex(first)),
        guard_(index_),
        stream_(CurrentCudaStream(index_)),
        allocator_(CudaAllocatorFor(index_)) {
    static_assert((std::is_same_v<Tensors, TensorBase> && ...),
                  "OnDevice takes the call's tensors");
    RecordUse(first);
    (RecordUse(rest), ...);
  }
  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }

 private:
  static int CheckedIndex(const TensorBase& tensor) {
    KINDLING_CHECK(tensor.device().type() == DeviceKind::kCuda,
                   "cuda backend: tensor %s is not on a cuda device",
                   tensor.ToString());
    return tensor.device().index();
  }
  // The storage's own address: no interior lookup. Memory of another device
  // (which the front end's checks keep out) would need that device's
  // allocator and events, so it is not recorded here.
  void RecordUse(const TensorBase& tensor) const {
    if (!tensor.defined() || tensor.device() != Device::Cuda(index_)) return;
    allocator_.RecordStream(tensor.storage()->data(), stream_);
  }

  int index_;
  CudaDeviceGuard guard_;
  cudaStream_t stream_;
  CudaAllocator& allocator_;
};

}  // namespace

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

void CudaBackend::SgdUpdate(const TensorBase& param, const TensorBase& grad,
                            const TensorBase& momentum_buffer,
                            const SgdUpdateScalars& scalars) {
  const OnDevice on(param, grad, momentum_buffer);
  SgdUpdateKernel(on.stream(), param, grad, momentum_buffer, scalars);
}

void CudaBackend::AdamUpdate(const TensorBase& param, const TensorBase& grad,
                             const TensorBase& exp_avg,
                             const TensorBase& exp_avg_sq,
                             const TensorBase& max_exp_avg_sq,
                             const AdamUpdateScalars& scalars) {
  const OnDevice on(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq);
  AdamUpdateKernel(on.stream(), param, grad, exp_avg, exp_avg_sq,
                   max_exp_avg_sq, scalars);
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
                            const Window2dGeometry& window) {
  const OnDevice on(out, argmax, input);
  MaxPool2dKernel(on.stream(), out, argmax, input, window);
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
