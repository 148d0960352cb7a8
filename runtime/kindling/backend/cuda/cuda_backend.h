// CudaBackend: the kernel table for DeviceKind::kCuda.
//
// Linking //runtime/kindling/backend/cuda:cuda registers it (a static
// initializer in an alwayslink library). Every method sets the tensors'
// device current (CudaDeviceGuard) and enqueues its kernels on that device's
// current stream (CurrentCudaStream) without synchronizing; only
// AbsPowerSum, which returns a host value, waits for its stream. Every
// method records its tensors' blocks as used on that stream, so a tensor
// freed while a kernel on another stream still uses it is not reused before
// that kernel has run (CudaAllocator::RecordStream). Matmul goes
// through cuBLAS (one handle per device); f32 GEMMs use TF32 tensor cores
// only after SetCudaMatmulAllowTf32(true).
#ifndef KINDLING_BACKEND_CUDA_CUDA_BACKEND_H_
#define KINDLING_BACKEND_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <string_view>

#include "kindling/tensor/backend.h"

namespace kindling::cuda {

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  // The element-wise, reduction, softmax and cuBLAS kernels load f16/bf16
  // themselves and compute in f32.
  bool ComputesHalfNatively() const override { return true; }
  // IndexSelect and Gather report out-of-range indices (index_fault.h).
  bool IndexKernelsCheckRange() const override { return true; }
  void Copy(const TensorBase& out, const TensorBase& in) override;
  void Fill(const TensorBase& out, double value) override;
  void Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
             double arg0, double arg1) override;
  void Binary(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override;
  void Where(const TensorBase& out, const TensorBase& condition,
             const TensorBase& on_true, const TensorBase& on_false) override;
  void Reduce(ReduceOp op, const TensorBase& out, const TensorBase& in,
              int axis) override;
  void Softmax(const TensorBase& out, const TensorBase& in, int axis,
               bool log) override;
  void Matmul(const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override;
  // Checks on the device, without waiting: see index_fault.h.
  void CheckIndices(const TensorBase& index, int64_t bound,
                    const char* op) override;
  void IndexSelect(const TensorBase& out, const TensorBase& in, int axis,
                   const TensorBase& index) override;
  void Gather(const TensorBase& out, const TensorBase& in, int axis,
              const TensorBase& index) override;
  void FillRandom(const TensorBase& out, RandomDistribution distribution,
                  uint64_t seed, uint64_t offset, double a, double b) override;
  void Dropout(const TensorBase& out, const TensorBase& in, double prob,
               uint64_t seed, uint64_t offset) override;
  double AbsPowerSum(const TensorBase& in, double p) override;
  void ScaleClamp(const TensorBase& inout, double scale,
                  double max_abs) override;
  void ScatterAdd(const TensorBase& out, int axis, const TensorBase& index,
                  const TensorBase& src) override;
  void Im2Col(const TensorBase& columns, const TensorBase& input,
              const Window2dGeometry& window, double pad_value) override;
  void Col2Im(const TensorBase& input_grad, const TensorBase& columns,
              const Window2dGeometry& window) override;
  void MaxPool2d(const TensorBase& out, const TensorBase& argmax,
                 const TensorBase& input, const Window2dGeometry& window,
                 PoolActivation activation) override;
  void MaxPool2dBackward(const TensorBase& input_grad, const TensorBase& grad,
                         const TensorBase& argmax,
                         const Window2dGeometry& window) override;
  // Convolution as im2col plus one whole-batch cuBLAS GEMM
  // (conv2d_composite.h).
  void Conv2d(const TensorBase& out, const TensorBase& input,
              const TensorBase& weight, const TensorBase& bias,
              const Window2dGeometry& window) override;
  void Conv2dBackward(const TensorBase& input_grad,
                      const TensorBase& weight_grad,
                      const TensorBase& bias_grad, const TensorBase& grad,
                      const TensorBase& input, const TensorBase& weight,
                      const Window2dGeometry& window) override;
  // One launch with the scalar in the kernel's arguments (elementwise.cu).
  void BinaryScalar(BinaryOp op, const TensorBase& out,
                    const TensorBase& tensor, double scalar,
                    bool scalar_is_lhs) override;

  // A warp or a block per row, the row in registers or shared memory
  // (layer_norm.cu).
  void LayerNorm(const TensorBase& out, const TensorBase& mean,
                 const TensorBase& rstd, const TensorBase& input,
                 const TensorBase& gamma, const TensorBase& beta,
                 double epsilon) override;
  void LayerNormBackward(const TensorBase& input_grad,
                         const TensorBase& gamma_grad,
                         const TensorBase& beta_grad, const TensorBase& grad,
                         const TensorBase& input, const TensorBase& mean,
                         const TensorBase& rstd,
                         const TensorBase& gamma) override;
};

// RegisterCudaBackend() registers CudaBackend for DeviceKind::kCuda
// (idempotent; the static initializer calls it).
void RegisterCudaBackend();

// SetCudaMatmulAllowTf32(): whether f32 matmuls may use TF32 tensor cores
// (about 10 mantissa bits per product; off by default, process-wide).
void SetCudaMatmulAllowTf32(bool allow);
bool CudaMatmulAllowsTf32();

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_CUDA_BACKEND_H_
