// Fused optimizer kernels on CUDA: one launch per parameter tensor for SGD
// and Adam/AdamW (no temporaries), gradient-norm AbsPowerSum (a two-level
// device reduction and one device-to-host copy of the result), and
// ScaleClamp. The element formulas are backend/cpu/optimizer_kernels.cc's,
// operation by operation (scalars rounded to the compute type first, moments
// rounded to their storage type before use), so results agree with the CPU
// to rounding (nvcc may fuse multiply-adds the CPU rounds twice).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cuda/block_reduce.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/device_element.h"
#include "kindling/backend/cuda/dispatch.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/backend/cuda/lines.h"

namespace kindling::cuda {
namespace {

template <class T>
__device__ inline ComputeType<T> Load(T value) {
  return ToCompute(value);
}

__device__ inline float SqrtC(float x) { return sqrtf(x); }
__device__ inline double SqrtC(double x) { return sqrt(x); }

void CheckSameLayout(const char* op, const char* name, const TensorBase& param,
                     const TensorBase& tensor) {
  KINDLING_CHECK(tensor.defined(), "cuda %s: %s is undefined", op, name);
  KINDLING_CHECK(
      tensor.is_contiguous() && tensor.dtype() == param.dtype() &&
          tensor.shape() == param.shape() && tensor.device() == param.device(),
      "cuda %s: %s is %s, contiguous=%d; the parameter is %s", op, name,
      tensor.ToString(), tensor.is_contiguous(), param.ToString());
}

// --- SGD ---------------------------------------------------------------------

template <class C>
struct SgdScalars {
  C weight_decay;
  C momentum;
  C grad_weight;  // 1 - dampening
  C neg_lr;
  bool first_step;
  bool decay;
  bool use_momentum;
  bool nesterov;
};

template <class T>
struct SgdOp {
  T* param;
  const T* grad;
  T* buffer;
  SgdScalars<ComputeType<T>> s;
  __device__ void operator()(int64_t i) const {
    using C = ComputeType<T>;
    const C p = Load(param[i]);
    C g = Load(grad[i]);
    if (s.decay) g = g + s.weight_decay * p;
    if (s.use_momentum) {
      const T b_stored = Convert<T>(
          s.first_step ? g : Load(buffer[i]) * s.momentum + s.grad_weight * g);
      buffer[i] = b_stored;
      const C b = Load(b_stored);
      g = s.nesterov ? g + s.momentum * b : b;
    }
    param[i] = Convert<T>(p + s.neg_lr * g);
  }
};

// --- Adam --------------------------------------------------------------------

template <class C>
struct AdamScalars {
  C weight_decay;
  C decay_factor;
  C beta1;
  C one_minus_beta1;
  C beta2;
  C one_minus_beta2;
  C eps;
  C neg_step_size;
  C bias_correction2_sqrt;
  bool l2_decay;
  bool decoupled_decay;
  bool amsgrad;
};

template <class T>
struct AdamOp {
  T* param;
  const T* grad;
  T* exp_avg;
  T* exp_avg_sq;
  T* max_exp_avg_sq;
  AdamScalars<ComputeType<T>> s;
  __device__ void operator()(int64_t i) const {
    using C = ComputeType<T>;
    C p = Load(param[i]);
    C g = Load(grad[i]);
    if (s.l2_decay) g = g + s.weight_decay * p;
    if (s.decoupled_decay) p = p * s.decay_factor;
    const T m_stored =
        Convert<T>(Load(exp_avg[i]) * s.beta1 + s.one_minus_beta1 * g);
    exp_avg[i] = m_stored;
    const C m = Load(m_stored);
    const T v_stored =
        Convert<T>(Load(exp_avg_sq[i]) * s.beta2 + s.one_minus_beta2 * g * g);
    exp_avg_sq[i] = v_stored;
    C v = Load(v_stored);
    if (s.amsgrad) {
      const C max_v = Load(max_exp_avg_sq[i]);
      v = max_v > v ? max_v : v;
      max_exp_avg_sq[i] = Convert<T>(v);
    }
    const C denom = SqrtC(v) / s.bias_correction2_sqrt + s.eps;
    param[i] = Convert<T>(p + s.neg_step_size * (m / denom));
  }
};

// --- Norm ----------------------------------------------------------------

// kNormThreads x kNormBlocks partial sums: a fixed split, so the result does
// not depend on the GPU, only on the element count.
constexpr int kNormThreads = 256;
static_assert(kNormThreads % kWarp == 0 &&
              kNormThreads <= kMaxBlockReduceThreads);
constexpr int kNormBlocks = 1024;

struct NormCombine {
  bool max;
  __device__ double operator()(double a, double b) const {
    if (!max) return a + b;
    return b > a || b != b ? b : a;  // NaN propagates
  }
};

template <class T>
__device__ inline double AbsPowerTerm(T value, double p, int mode) {
  const double x = static_cast<double>(ToCompute(value));
  switch (mode) {
    case 0:  // max |x|
    case 1:  // p == 1
      return fabs(x);
    case 2:  // p == 2
      return x * x;
    default:
      return pow(fabs(x), p);
  }
}

// First level: block b reduces elements b*256+t, stepping the grid, into
// partial[b].
template <class T>
__global__ void AbsPowerPartial(const T* data, int64_t count, double p,
                                int mode, double* partial) {
  __shared__ double scratch[kWarp];
  const NormCombine combine{mode == 0};
  double total = 0;
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    total = combine(total, AbsPowerTerm(data[i], p, mode));
  }
  total = BlockAllReduce(total, scratch, combine);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// Second level: one block reduces the partials into partial[0]... written to
// `result`.
__global__ void AbsPowerFinal(const double* partial, int count, int mode,
                              double* result) {
  __shared__ double scratch[kWarp];
  const NormCombine combine{mode == 0};
  double total = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    total = combine(total, partial[i]);
  }
  total = BlockAllReduce(total, scratch, combine);
  if (threadIdx.x == 0) *result = total;
}

template <class T>
struct ScaleClampOp {
  T* data;
  ComputeType<T> factor;
  ComputeType<T> low;
  ComputeType<T> high;
  __device__ void operator()(int64_t i) const {
    const ComputeType<T> x = Load(data[i]) * factor;
    // Comparisons keep NaN as NaN, like torch.clamp.
    data[i] = Convert<T>(x < low ? low : (x > high ? high : x));
  }
};

}  // namespace

void SgdUpdateKernel(cudaStream_t stream, const TensorBase& param,
                     const TensorBase& grad, const TensorBase& momentum_buffer,
                     const Backend::SgdUpdateScalars& scalars) {
  KINDLING_CHECK(param.is_contiguous(), "cuda SgdUpdate: param %s is strided",
                 param.ToString());
  CheckSameLayout("SgdUpdate", "grad", param, grad);
  const bool momentum = scalars.momentum != 0;
  if (momentum) {
    CheckSameLayout("SgdUpdate", "momentum_buffer", param, momentum_buffer);
  }
  DispatchDType<kFloatingDTypes>(
      param.dtype(), "cuda SgdUpdate", [&]<class T>() {
        using C = ComputeType<T>;
        const SgdScalars<C> s{static_cast<C>(scalars.weight_decay),
                              static_cast<C>(scalars.momentum),
                              static_cast<C>(1 - scalars.dampening),
                              static_cast<C>(-scalars.lr),
                              scalars.first_step,
                              scalars.weight_decay != 0,
                              momentum,
                              momentum && scalars.nesterov};
        LaunchContiguous(
            "SgdOp", stream, param.numel(),
            SgdOp<T>{param.data_as<T>(), grad.data_as<const T>(),
                     momentum ? momentum_buffer.data_as<T>() : nullptr, s});
      });
}

void AdamUpdateKernel(cudaStream_t stream, const TensorBase& param,
                      const TensorBase& grad, const TensorBase& exp_avg,
                      const TensorBase& exp_avg_sq,
                      const TensorBase& max_exp_avg_sq,
                      const Backend::AdamUpdateScalars& scalars) {
  KINDLING_CHECK(param.is_contiguous(), "cuda AdamUpdate: param %s is strided",
                 param.ToString());
  CheckSameLayout("AdamUpdate", "grad", param, grad);
  CheckSameLayout("AdamUpdate", "exp_avg", param, exp_avg);
  CheckSameLayout("AdamUpdate", "exp_avg_sq", param, exp_avg_sq);
  if (scalars.amsgrad) {
    CheckSameLayout("AdamUpdate", "max_exp_avg_sq", param, max_exp_avg_sq);
  }
  const bool decay = scalars.weight_decay != 0;
  DispatchDType<kFloatingDTypes>(
      param.dtype(), "cuda AdamUpdate", [&]<class T>() {
        using C = ComputeType<T>;
        const AdamScalars<C> s{
            static_cast<C>(scalars.weight_decay),
            static_cast<C>(1 - scalars.lr * scalars.weight_decay),
            static_cast<C>(scalars.beta1),
            static_cast<C>(1 - scalars.beta1),
            static_cast<C>(scalars.beta2),
            static_cast<C>(1 - scalars.beta2),
            static_cast<C>(scalars.eps),
            static_cast<C>(-scalars.step_size),
            static_cast<C>(scalars.bias_correction2_sqrt),
            decay && !scalars.decoupled_weight_decay,
            decay && scalars.decoupled_weight_decay,
            scalars.amsgrad};
        LaunchContiguous(
            "AdamOp", stream, param.numel(),
            AdamOp<T>{param.data_as<T>(), grad.data_as<const T>(),
                      exp_avg.data_as<T>(), exp_avg_sq.data_as<T>(),
                      scalars.amsgrad ? max_exp_avg_sq.data_as<T>() : nullptr,
                      s});
      });
}

double AbsPowerSumKernel(cudaStream_t stream, const TensorBase& in, double p) {
  KINDLING_CHECK(in.is_contiguous(), "cuda AbsPowerSum: %s is strided",
                 in.ToString());
  KINDLING_CHECK(p > 0, "cuda AbsPowerSum: p = %g must be positive", p);
  const int64_t count = in.numel();
  if (count == 0) return 0;
  const int mode = std::isinf(p) ? 0 : (p == 1 ? 1 : (p == 2 ? 2 : 3));
  // Partials and the result live in one small device buffer from the
  // device's allocator (cached, so no cudaMalloc on the hot path).
  const TensorBase scratch =
      TensorBase::Empty(Shape{kNormBlocks + 1}, DType::kF64, in.device());
  double* partial = scratch.data_as<double>();
  double* result = partial + kNormBlocks;
  const int64_t needed = (count + kNormThreads - 1) / kNormThreads;
  const int blocks =
      static_cast<int>(needed < kNormBlocks ? needed : kNormBlocks);
  DispatchDType<kFloatingDTypes>(
      in.dtype(), "cuda AbsPowerSum", [&]<class T>() {
        AbsPowerPartial<T><<<blocks, kNormThreads, 0, stream>>>(
            in.data_as<const T>(), count, p, mode, partial);
        KINDLING_CUDA_CHECK_LAUNCH("AbsPowerPartial");
      });
  AbsPowerFinal<<<1, kNormThreads, 0, stream>>>(partial, blocks, mode, result);
  KINDLING_CUDA_CHECK_LAUNCH("AbsPowerFinal");
  double host = 0;
  KINDLING_CUDA_CHECK(cudaMemcpyAsync(&host, result, sizeof(double),
                                      cudaMemcpyDeviceToHost, stream));
  KINDLING_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void ScaleClampKernel(cudaStream_t stream, const TensorBase& inout,
                      double scale, double max_abs) {
  KINDLING_CHECK(inout.is_contiguous(), "cuda ScaleClamp: %s is strided",
                 inout.ToString());
  DispatchDType<kFloatingDTypes>(
      inout.dtype(), "cuda ScaleClamp", [&]<class T>() {
        using C = ComputeType<T>;
        const C high = static_cast<C>(max_abs);
        LaunchContiguous("ScaleClampOp", stream, inout.numel(),
                         ScaleClampOp<T>{inout.data_as<T>(),
                                         static_cast<C>(scale), -high, high});
      });
}

}  // namespace kindling::cuda
