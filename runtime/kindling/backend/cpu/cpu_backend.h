// CpuBackend: the kernel table for DeviceKind::kCpu.
//
// Linking //runtime/kindling/backend/cpu registers it together with its
// memory, CpuDeviceMemory (a static initializer in an alwayslink library), so
// any program that depends on that target can create CPU tensors; nothing
// needs to call anything. Kernels parallelize with
// OpenMP over the machine's cores above about 64K elements and run serially
// below; matmul goes through OpenBLAS. Set OMP_NUM_THREADS to bound the
// threads.
#ifndef KINDLING_BACKEND_CPU_CPU_BACKEND_H_
#define KINDLING_BACKEND_CPU_CPU_BACKEND_H_

#include <cstdint>
#include <string_view>

#include "kindling/tensor/backend.h"

namespace kindling::cpu {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  void Copy(const TensorBase& out, const TensorBase& in) override;
  void Fill(const TensorBase& out, double value) override;
  void Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
             double arg0, double arg1) override;
  bool GeluWithSlope(const TensorBase& in, TensorBase* out,
                     TensorBase* slope) override;
  void Binary(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override;
  void Where(const TensorBase& out, const TensorBase& condition,
             const TensorBase& on_true, const TensorBase& on_false) override;
  void Reduce(ReduceOp op, const TensorBase& out, const TensorBase& in,
              int axis) override;
  void Softmax(const TensorBase& out, const TensorBase& in, int axis,
               bool log) override;
  bool CrossEntropyBackward(const TensorBase& out,
                            const TensorBase& log_probabilities,
                            const TensorBase& labels, double label_smoothing,
                            const TensorBase& grad) override;
  bool ReluBiasBackward(const TensorBase& grad_product,
                        const TensorBase& grad_bias, const TensorBase& grad,
                        const TensorBase& out) override;
  void Matmul(const TensorBase& out, const TensorBase& lhs,
              const TensorBase& rhs) override;
  bool MatmulBias(const TensorBase& out, const TensorBase& lhs,
                  const TensorBase& rhs, const TensorBase& bias,
                  ProductActivation activation) override;
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

  // Gradient-clipping kernels (clip_kernels.h).
  double AbsPowerSum(const TensorBase& in, double p) override;
  void ScaleClamp(const TensorBase& inout, double scale,
                  double max_abs) override;
  void ScatterAdd(const TensorBase& out, int axis, const TensorBase& index,
                  const TensorBase& src) override;

  // Sliding-window kernels (window.cc).
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

  // Convolution, one sample per thread at a time (conv2d.cc).
  void Conv2d(const TensorBase& out, const TensorBase& input,
              const TensorBase& weight, const TensorBase& bias,
              const Window2dGeometry& window) override;
  void Conv2dBackward(const TensorBase& input_grad,
                      const TensorBase& weight_grad,
                      const TensorBase& bias_grad, const TensorBase& grad,
                      const TensorBase& input, const TensorBase& weight,
                      const Window2dGeometry& window) override;
  // oneDNN's convolutions pooled in their own layout (onednn_conv2d.h).
  bool Conv2dMaxPool(const TensorBase& out, const TensorBase& argmax,
                     const TensorBase& input, const TensorBase& weight,
                     const TensorBase& bias, const Window2dGeometry& conv,
                     const Window2dGeometry& pool,
                     PoolActivation activation) override;
  bool Conv2dMaxPoolBackward(const TensorBase& input_grad,
                             const TensorBase& weight_grad,
                             const TensorBase& bias_grad,
                             const TensorBase& pooled_grad,
                             const TensorBase& argmax, const TensorBase& input,
                             const TensorBase& weight,
                             const Window2dGeometry& conv,
                             const Window2dGeometry& pool) override;

  // The scalar converted once and captured by value (elementwise.cc).
  void BinaryScalar(BinaryOp op, const TensorBase& out,
                    const TensorBase& tensor, double scalar,
                    bool scalar_is_lhs) override;

  // Layer normalization, rows split over threads (layer_norm.cc).
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

// RegisterCpuBackend() registers CpuBackend and CpuDeviceMemory
// (cpu_device_memory.h) for DeviceKind::kCpu (idempotent). The static
// initializer calls it; call it yourself only if your link drops
// alwayslink libraries.
void RegisterCpuBackend();

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_CPU_BACKEND_H_
