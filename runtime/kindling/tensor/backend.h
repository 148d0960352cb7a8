// Backend: the kernel table a device type registers, and the registry the
// tensor front end dispatches through.
//
// Raw memory (allocate, free, byte copies) is the other half of a device type
// and lives in device_memory.h: Storage needs memory but no kernels, and the
// kernels take TensorBase, which is built on Storage. This header only
// forward-declares TensorBase, so the backend library sits below tensor_base.
//
// runtime/tensor knows shapes, broadcasting and views but no kernels: it sits
// below runtime/backend. Each op validates its operands, allocates the output
// and calls the Backend registered for the operands' device type. The CPU
// backend registers itself when //runtime/kindling/backend/cpu is linked (its
// library is alwayslink); a CUDA backend will register for DeviceKind::kCuda
// the same way. Using a device whose backend is not linked aborts with a
// message saying which target to add.
//
// Kernel contract, for every method below:
//   * outputs come first; `out` is allocated by the caller and, unless stated
//     otherwise, contiguous with the output shape and dtype;
//   * inputs may be any strided view (transposed, sliced, expanded with zero
//     strides) on the same device, already broadcast to the shapes stated;
//   * the front end has checked shapes, dtypes and axes; a backend aborts on
//     a dtype it does not implement.
#ifndef KINDLING_TENSOR_BACKEND_H_
#define KINDLING_TENSOR_BACKEND_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "kindling/tensor/device.h"
#include "kindling/tensor/elementwise_op.h"
#include "kindling/tensor/random_distribution.h"

namespace kindling {

class TensorBase;

// ReduceOp reduces one axis. kArgMax / kArgMin write i64 indices (the first
// index on ties); the others keep the input dtype.
enum class ReduceOp { kSum, kMean, kMax, kMin, kArgMax, kArgMin };

// Window2dGeometry: a 2-D sliding window over the (H, W) plane of an NCHW
// tensor, as (height, width) pairs: window position (oh, ow) covers input
// cells (oh * stride[0] - padding[0] + i * dilation[0],
//        ow * stride[1] - padding[1] + j * dilation[1]) for kernel entry
// (i, j), 0 <= i < kernel[0], 0 <= j < kernel[1]. Cells outside the input
// are padding. OH = (H + 2 padding[0] - dilation[0] (kernel[0] - 1) - 1) /
// stride[0] + 1, OW likewise. The front end checks that every field is
// positive (padding >= 0) and that the window fits at least once.
struct Window2dGeometry {
  std::array<int64_t, 2> kernel = {1, 1};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  std::array<int64_t, 2> dilation = {1, 1};

  // Span() is the dilated kernel's extent along `axis`:
  // dilation (kernel - 1) + 1 cells.
  int64_t Span(int axis) const {
    return (kernel[axis] - 1) * dilation[axis] + 1;
  }

  // OutputSize() is OH (axis 0) or OW (axis 1) for an input side of
  // `input`, by the formula above (unchecked: the front end checks).
  int64_t OutputSize(int axis, int64_t input) const {
    return (input + 2 * padding[axis] - Span(axis)) / stride[axis] + 1;
  }
};

// PoolActivation: what Backend::MaxPool2d applies to each window's maximum.
//   kNone  the maximum itself.
//   kRelu  element_math::Relu of it (0 unless the maximum is > 0, so NaN
//          gives 0), with argmax -1 where the maximum is <= 0: where
//          relu_backward passes no gradient (it passes one for a NaN). So
//          the pool and the ReLU after it are one pass over the input, and
//          MaxPool2dBackward through that argmax is the two ops' gradient.
enum class PoolActivation { kNone, kRelu };

// ProductActivation: what Backend::MatmulBias applies to each entry of the
// product plus bias.
//   kNone  the sum itself.
//   kRelu  element_math::Relu of it (0 unless the sum is > 0, so NaN gives 0).
enum class ProductActivation { kNone, kRelu };

// Window codes: the compact argmax of a pooled convolution
// (Backend::Conv2dMaxPool): per window, as a u8, the position of its
// maximum within the window, row-major (i * kernel_w + j: 0 1 / 2 3 for a
// 2x2 window), or kNoWindowCell where the window passes no gradient (the
// argmax's -1). One byte a window instead of MaxPool2d's eight-byte input
// cell; ops::WindowCodesToCells() turns them into that cell argmax.
inline constexpr uint8_t kNoWindowCell = 255;

class Backend {
 public:
  virtual ~Backend() = default;

  // name() is for messages, e.g. "cpu".
  virtual std::string_view name() const = 0;

  // ComputesHalfNatively() is true when this backend's Unary, Binary,
  // BinaryScalar, Reduce, Softmax, Matmul, LayerNorm and LayerNormBackward
  // take f16 and bf16 tensors themselves (computing in f32 and rounding each
  // result once, as the front end's f32 round trip does). Otherwise the
  // front end hands those methods f32 copies and rounds their results back.
  // The other kernels (windows, convolution, scatter-add) always get f32 for
  // 16-bit floats.
  virtual bool ComputesHalfNatively() const { return false; }

  // IndexKernelsCheckRange() is true when IndexSelect and Gather check
  // every index themselves, as CheckIndices() would (CUDA: index_fault.h),
  // so the front end skips the separate CheckIndices() call before them.
  virtual bool IndexKernelsCheckRange() const { return false; }

  // --- Element-wise ----------------------------------------------------------

  // Copy(): out[i] = convert(in[i]) for one shape; `out` may be a strided
  // view (cat writes through narrowed views) and the dtypes may differ
  // (floats round to nearest even; float to integer truncates, saturates
  // and maps NaN to 0; integer to a narrower integer wraps; x -> bool is
  // x != 0).
  virtual void Copy(const TensorBase& out, const TensorBase& in) = 0;

  // Fill(): every element of `out` (any strided view) <- value.
  virtual void Fill(const TensorBase& out, double value) = 0;

  // Unary(): out = op(in), one shape and dtype.
  virtual void Unary(UnaryOp op, const TensorBase& out, const TensorBase& in,
                     double arg0, double arg1) = 0;

  // GeluWithSlope(): sets *out = Unary(kGelu, in) and *slope = GELU's
  // derivative at in, the factor Binary(kGeluBackward, grad, in) multiplies
  // grad by, bit for bit both, from one evaluation of what they share:
  // autodiff then keeps the slope instead of the input and GELU's backward
  // is a multiply. Both are new tensors of in's shape and dtype. Returns
  // false, having allocated and written nothing, where the backend has no
  // such kernel for `in` (the caller then saves the input and runs
  // kGeluBackward). The default has none.
  virtual bool GeluWithSlope(const TensorBase& in, TensorBase* out,
                             TensorBase* slope) {
    return false;
  }

  // Binary(): out = op(lhs, rhs); lhs and rhs have out's shape (broadcast by
  // zero strides) and one dtype. `out` may alias lhs exactly (in-place ops).
  virtual void Binary(BinaryOp op, const TensorBase& out, const TensorBase& lhs,
                      const TensorBase& rhs) = 0;

  // Where(): out = condition ? on_true : on_false, all of out's shape.
  virtual void Where(const TensorBase& out, const TensorBase& condition,
                     const TensorBase& on_true, const TensorBase& on_false) = 0;

  // BinaryScalar(): out = op(tensor, scalar), or op(scalar, tensor) when
  // `scalar_is_lhs`, with Binary()'s arithmetic and output dtype
  // (comparisons write Bool). The scalar is first converted to tensor's
  // dtype exactly as Fill() converts its value, so the result equals
  // Binary() with a rank-0 tensor Fill()ed with `scalar`, bit for bit; it is
  // passed by value, so the call allocates nothing. `tensor` may be any
  // strided view of out's shape; `out` may alias `tensor` exactly.
  virtual void BinaryScalar(BinaryOp op, const TensorBase& out,
                            const TensorBase& tensor, double scalar,
                            bool scalar_is_lhs) = 0;

  // --- Reductions and matrix products
  // -----------------------------------------

  // Reduce(): out has in's shape with size 1 at `axis`.
  virtual void Reduce(ReduceOp op, const TensorBase& out, const TensorBase& in,
                      int axis) = 0;

  // Softmax(): out = softmax(in) (or log_softmax) along `axis`, same shape.
  virtual void Softmax(const TensorBase& out, const TensorBase& in, int axis,
                       bool log) = 0;

  // CrossEntropyBackward(): the gradient of the mean cross-entropy over rows
  // through log_softmax, out [R, C] = (exp(log_probabilities) - q) *
  // (grad / R) with q the target distribution: at row r's label
  // 1 - eps + eps / C, elsewhere eps / C (eps = label_smoothing; the one-hot
  // rows for 0). `labels` [R] are i64 and `grad` holds one value. The values
  // of OneHot, Exp, Sub and a Mul by BinaryScalar(kDiv, grad, R) one after the
  // other, bit for bit, in one pass and without their temporaries. Returns
  // false, having written nothing, where the backend has no such kernel for
  // these operands (the caller then runs those ops). The default has none.
  virtual bool CrossEntropyBackward(const TensorBase& out,
                                    const TensorBase& log_probabilities,
                                    const TensorBase& labels,
                                    double label_smoothing,
                                    const TensorBase& grad) {
    return false;
  }

  // ReluBiasBackward(): the gradients of relu(x W + b) at its product and at
  // its bias, from grad [R, N], the gradient at its output out [R, N]:
  // grad_product [R, N] = grad where out > 0, else 0, and grad_bias [N] the
  // sums of grad_product's columns. The values of Binary(kReluBackward, grad,
  // out) and then Reduce(kSum) over axis 0, bit for bit, in one pass. Returns
  // false, having written nothing, where the backend has no such kernel for
  // these operands (the caller then runs those ops). The default has none.
  virtual bool ReluBiasBackward(const TensorBase& grad_product,
                                const TensorBase& grad_bias,
                                const TensorBase& grad, const TensorBase& out) {
    return false;
  }

  // Matmul(): out [B.., M, N] = lhs [B.., M, K] x rhs [B.., K, N]; the batch
  // dims B.. are already broadcast (possibly zero strides).
  virtual void Matmul(const TensorBase& out, const TensorBase& lhs,
                      const TensorBase& rhs) = 0;

  // MatmulBias(): out [B.., M, N] = activation(lhs [B.., M, K] x rhs [B.., K,
  // N] + bias [N]), the sum rounded to out's dtype before the activation:
  // the values of Matmul, Binary(kAdd) and Unary(kRelu) one after the other,
  // bit for bit, while the product is still in cache. Returns false, having
  // written nothing, where the backend has no such kernel for these operands
  // (the caller then runs those ops). The default has none.
  virtual bool MatmulBias(const TensorBase& out, const TensorBase& lhs,
                          const TensorBase& rhs, const TensorBase& bias,
                          ProductActivation activation) {
    return false;
  }

  // --- Indexing --------------------------------------------------------------

  // CheckIndices(): every entry of `index` (i64 or i32, any strided view)
  // lies in [0, bound). The front end calls it before each index op instead
  // of reading the indices itself, so no backend is made to copy them to the
  // host. A synchronous backend aborts naming `op` (a string literal), the
  // first bad entry and the range; an asynchronous one may report it at its
  // next synchronization instead, provided its index kernels then never
  // read out of bounds (CUDA: index_fault.h).
  virtual void CheckIndices(const TensorBase& index, int64_t bound,
                            const char* op) = 0;

  // IndexSelect(): out = in with `axis` replaced by index's entries;
  // index is 1-D i64/i32, already passed to CheckIndices().
  virtual void IndexSelect(const TensorBase& out, const TensorBase& in,
                           int axis, const TensorBase& index) = 0;

  // Gather(): out[.., i, ..] = in[.., index[.., i, ..], ..] along `axis`;
  // index has out's shape, already passed to CheckIndices().
  virtual void Gather(const TensorBase& out, const TensorBase& in, int axis,
                      const TensorBase& index) = 0;

  // ScatterAdd(): out[.., index[.., i, ..], ..] += src[.., i, ..] along
  // `axis`, the reverse of Gather (its gradient, and index_select's with the
  // index broadcast). index and src have one shape, equal to out's outside
  // `axis`; entries in range; out is contiguous and of src's dtype (f32 or
  // f64); repeated indices accumulate.
  virtual void ScatterAdd(const TensorBase& out, int axis,
                          const TensorBase& index, const TensorBase& src) = 0;

  // --- Random (philox.h defines the stream bit for bit) ---------------------

  // FillRandom(): out (contiguous, floating dtype) <- `distribution` with
  // parameters (a, b), element i drawn from Philox blocks offset + i / 4
  // under key `seed` (offset + i / 2 for f64 uniform and normal). The values
  // must not depend on how the work is split over threads.
  virtual void FillRandom(const TensorBase& out,
                          RandomDistribution distribution, uint64_t seed,
                          uint64_t offset, double a, double b) = 0;

  // Dropout(): out = in * mask, the mask being what FillRandom(kBernoulli,
  // a = prob, b = 1 / (1 - prob)) writes for the same seed and offset; out is
  // contiguous, `in` any strided view of out's shape and dtype. Applied to a
  // gradient with the same arguments it is dropout's backward.
  virtual void Dropout(const TensorBase& out, const TensorBase& in, double prob,
                       uint64_t seed, uint64_t offset) = 0;

  // --- Gradient clipping (runtime/kindling/optim/clip.h) ---------------------
  // The update rules' own fused kernels live with the optimizer
  // (optim/fused_update.h), not here.

  // AbsPowerSum(): sum over `in` (contiguous) of |x|^p, or max |x| when p is
  // +infinity, accumulated in f64 (gradient-norm clipping).
  virtual double AbsPowerSum(const TensorBase& in, double p) = 0;

  // ScaleClamp(): x = clamp(x * scale, -max_abs, max_abs) for every element
  // of `inout` (contiguous), in place (gradient clipping; max_abs may be
  // +infinity).
  virtual void ScaleClamp(const TensorBase& inout, double scale,
                          double max_abs) = 0;

  // --- Sliding windows (convolution and pooling over NCHW) -----------------
  // Shapes: input [N, C, H, W]; K = KH * KW kernel entries, k = i * KW + j;
  // window positions [OH, OW] as Window2dGeometry defines them. Dtype f32 or
  // f64 (the front end computes f16/bf16 in f32).

  // Im2Col(): columns[n, c, k, oh, ow] = the input cell kernel entry k of
  // window position (oh, ow) covers in plane (n, c), or `pad_value` when
  // that cell is padding. `columns` is a [N, C, K, OH, OW] strided view
  // chosen by the caller (the front end passes a permuted view of a
  // contiguous [C, K, N, OH, OW] buffer: the [C * K, N * OH * OW] matrix one
  // GEMM multiplies by the [out, C * K] weight); every element is written.
  // `input` may be any strided view.
  virtual void Im2Col(const TensorBase& columns, const TensorBase& input,
                      const Window2dGeometry& window, double pad_value) = 0;

  // Col2Im(): the adjoint of Im2Col. `input_grad` [N, C, H, W] (contiguous)
  // is overwritten with, for each cell, the sum of the columns[n, c, k, oh,
  // ow] entries Im2Col would have read from that cell (entries that fell on
  // padding are dropped; cells under no window get 0). `columns` is a
  // [N, C, K, OH, OW] strided view (zero strides allowed).
  virtual void Col2Im(const TensorBase& input_grad, const TensorBase& columns,
                      const Window2dGeometry& window) = 0;

  // MaxPool2d(): out[n, c, oh, ow] = max over the window's input cells
  // (padding never wins; the first NaN wins, as in PyTorch a NaN
  // is never replaced by a number), and when `argmax` is defined
  // argmax[n, c, oh, ow] = h * W + w of that cell, the first in kernel order
  // on ties. `out` and `argmax` (i64) are contiguous [N, C, OH, OW]; `input`
  // may be any strided view. A window that covers no input cell (only
  // padding) gives -infinity and argmax -1. `activation` then applies to
  // the value and the argmax (PoolActivation).
  virtual void MaxPool2d(const TensorBase& out, const TensorBase& argmax,
                         const TensorBase& input,
                         const Window2dGeometry& window,
                         PoolActivation activation) = 0;

  // MaxPool2dBackward(): `input_grad` [N, C, H, W] (contiguous) is
  // overwritten with zeros, then input_grad[n, c, argmax[n, c, oh, ow]] +=
  // grad[n, c, oh, ow] for every window position in row-major (oh, ow)
  // order (overlapping windows that share a maximum accumulate; argmax -1
  // entries are skipped). `grad` [N, C, OH, OW] may be any strided view;
  // `argmax` must be what MaxPool2d wrote with this same `window`
  // (REQUIRES, not checked: every entry a cell of its own window), which
  // lets a backend gather per input cell, visiting only the windows that
  // cover it, instead of scattering with atomics.
  virtual void MaxPool2dBackward(const TensorBase& input_grad,
                                 const TensorBase& grad,
                                 const TensorBase& argmax,
                                 const Window2dGeometry& window) = 0;

  // Conv2d(): out[n, o, oh, ow] = bias[o] (0 when `bias` is undefined) plus
  // the sum over channels c and kernel entries (i, j) of weight[o, c, i, j]
  // times the input cell entry (i, j) of window position (oh, ow) covers in
  // plane (n, c) (0 on padding). `out` [N, O, OH, OW], `weight`
  // [O, C, KH, KW] and `bias` [O] are contiguous; `input` [N, C, H, W] may be
  // any strided view. f32 and f64.
  virtual void Conv2d(const TensorBase& out, const TensorBase& input,
                      const TensorBase& weight, const TensorBase& bias,
                      const Window2dGeometry& window) = 0;

  // Conv2dBackward(): given `grad` [N, O, OH, OW] (contiguous), the gradient
  // of a loss with respect to Conv2d()'s output, overwrites each of
  // `input_grad` [N, C, H, W], `weight_grad` [O, C, KH, KW] and `bias_grad`
  // [O] that is defined (all contiguous) with the loss's gradient with
  // respect to that operand; at least one of input_grad and weight_grad is
  // defined. `input` is read only for weight_grad (it may be any strided
  // view) and `weight` (contiguous) only for input_grad; either may be
  // undefined when not read.
  virtual void Conv2dBackward(const TensorBase& input_grad,
                              const TensorBase& weight_grad,
                              const TensorBase& bias_grad,
                              const TensorBase& grad, const TensorBase& input,
                              const TensorBase& weight,
                              const Window2dGeometry& window) = 0;

  // Conv2dMaxPool(): MaxPool2d(Conv2d(input, weight, bias, conv), pool,
  // activation) into `out` (as MaxPool2d() writes it) and `argmax`, u8
  // window codes (kNoWindowCell where MaxPool2d()'s argmax is -1; may be
  // undefined), without writing the convolution's output in between: a
  // backend may pool it where it is computed, in its own layout. Returns
  // false, having written nothing, where it has no such kernel for these
  // operands; the caller then runs Conv2d() and MaxPool2d(). Operands as
  // Conv2d()'s.
  virtual bool Conv2dMaxPool(const TensorBase& out, const TensorBase& argmax,
                             const TensorBase& input, const TensorBase& weight,
                             const TensorBase& bias,
                             const Window2dGeometry& conv,
                             const Window2dGeometry& pool,
                             PoolActivation activation) {
    return false;
  }

  // Conv2dMaxPoolBackward(): Conv2dBackward() for the convolution's output
  // gradient MaxPool2dBackward(pooled_grad, argmax, pool), without writing
  // that gradient out in [N, O, OH, OW]. `pooled_grad` and `argmax`
  // [N, O, PH, PW] are contiguous, the argmax the u8 window codes
  // Conv2dMaxPool() wrote; the rest as Conv2dBackward()'s. Returns false,
  // having written nothing, where the backend has no such kernel.
  virtual bool Conv2dMaxPoolBackward(
      const TensorBase& input_grad, const TensorBase& weight_grad,
      const TensorBase& bias_grad, const TensorBase& pooled_grad,
      const TensorBase& argmax, const TensorBase& input,
      const TensorBase& weight, const Window2dGeometry& conv,
      const Window2dGeometry& pool) {
    return false;
  }

  // --- Layer normalization ---------------------------------------------------
  // Shapes: `input` is R rows of D features, [R, D] (the last axis of the
  // user's tensor; the front end reshapes), contiguous like every tensor of
  // these two kernels. T is input's dtype: f32 or f64, and on backends that
  // implement them (CUDA) f16 and bf16 too; the front end (ops::LayerNorm)
  // hands f16/bf16 over converted to f32 unless ComputesHalfNatively().
  // `gamma` and `beta` [D] are T. The statistics `mean` and `rstd` [R] are
  // in T's compute dtype: f32 for f16, bf16 and f32, f64 for f64.
  // Statistics accumulate in at least f32, around the row's mean (two
  // passes, never E[x^2] - E[x]^2). Results must not depend on how the work
  // is split over threads.

  // LayerNorm(): for each row r, with mean[r] the average of the row and
  // rstd[r] = 1 / sqrt(var + epsilon), var the biased variance around
  // mean[r]:
  //   out[r, j] = (input[r, j] - mean[r]) * rstd[r] * gamma[j] + beta[j]
  // gamma undefined counts as ones and beta undefined as zeros. Writes
  // `out` [R, D], `mean` and `rstd` [R] (saved for LayerNormBackward). R and
  // D are positive.
  virtual void LayerNorm(const TensorBase& out, const TensorBase& mean,
                         const TensorBase& rstd, const TensorBase& input,
                         const TensorBase& gamma, const TensorBase& beta,
                         double epsilon) = 0;

  // LayerNormBackward(): given `grad` [R, D], the gradient of a loss with
  // respect to LayerNorm()'s `out`, and the `mean` and `rstd` LayerNorm()
  // wrote for `input`, overwrites each of `input_grad` [R, D], `gamma_grad`
  // and `beta_grad` [D] (dtype T) that is defined (at least one is) with
  // the loss's gradient with respect to that operand. With
  // xhat = (x - mean) * rstd and g = grad * gamma:
  //   input_grad = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))
  //   gamma_grad = sum_r(grad * xhat),  beta_grad = sum_r(grad)
  // `gamma` undefined counts as ones. The column sums are deterministic:
  // fixed row chunks summed in chunk order, whatever the thread count. R and
  // D are positive.
  virtual void LayerNormBackward(const TensorBase& input_grad,
                                 const TensorBase& gamma_grad,
                                 const TensorBase& beta_grad,
                                 const TensorBase& grad,
                                 const TensorBase& input,
                                 const TensorBase& mean, const TensorBase& rstd,
                                 const TensorBase& gamma) = 0;
};

// RegisterBackend() makes `backend` serve every device of `type`. Called from
// a backend library's static initializer; `backend` must live forever. A
// second registration for the same type replaces the first.
void RegisterBackend(DeviceKind type, Backend* backend);

// HasBackend() is true when a backend serves `type`.
bool HasBackend(DeviceKind type);

// GetBackend() is the backend serving `device`; aborts when none is linked.
Backend& GetBackend(const Device& device);

}  // namespace kindling

#endif  // KINDLING_TENSOR_BACKEND_H_
