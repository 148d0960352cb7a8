// Fused optimizer updates for the CPU backend (see optimizer_kernels.h).
//
// The element formulas follow PyTorch 1.13's single-tensor SGD/Adam/AdamW
// step operation by operation (the scalar factors rounded to the compute
// type first, as torch does with a Python float multiplier), so that f32
// trajectories agree with PyTorch's to rounding.
#include "kindling/backend/cpu/optimizer_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// ComputeType<T>: f64 stays f64; f32, f16 and bf16 compute in f32.
template <class T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, double>, double, float>;

// CheckSameLayout() aborts unless `tensor` is contiguous with `param`'s
// shape and dtype: the front end (runtime/kindling/optim) guarantees it.
void CheckSameLayout(const char* op, const char* name, const TensorBase& param,
                     const TensorBase& tensor) {
  KINDLING_CHECK(tensor.defined(), "cpu %s: %s is undefined", op, name);
  KINDLING_CHECK(tensor.is_contiguous() && tensor.dtype() == param.dtype() &&
                     tensor.shape() == param.shape(),
                 "cpu %s: %s is %s, contiguous=%d; the parameter is %s", op,
                 name, tensor.ToString(), tensor.is_contiguous(),
                 param.ToString());
}

template <class T>
inline ComputeType<T> Load(T value) {
  return Convert<ComputeType<T>>(value);
}

template <class T>
inline T Store(ComputeType<T> value) {
  return Convert<T>(value);
}

// --- SGD ------------------------------------------------------------------

// SgdRange() updates elements [begin, end).
template <class T, bool kDecay, bool kMomentum, bool kNesterov>
void SgdRange(T* __restrict param, const T* __restrict grad,
              T* __restrict buffer, int64_t begin, int64_t end,
              const Backend::SgdUpdateScalars& s) {
  using C = ComputeType<T>;
  const C weight_decay = static_cast<C>(s.weight_decay);
  const C momentum = static_cast<C>(s.momentum);
  const C grad_weight = static_cast<C>(1 - s.dampening);
  const C neg_lr = static_cast<C>(-s.lr);
  const bool first = s.first_step;
  for (int64_t i = begin; i < end; ++i) {
    const C p = Load(param[i]);
    C g = Load(grad[i]);
    if constexpr (kDecay) g = g + weight_decay * p;
    if constexpr (kMomentum) {
      // The buffer is rounded to its storage type before use, as PyTorch's
      // (which lives in the parameter's dtype) is.
      const T b_stored =
          Store<T>(first ? g : Load(buffer[i]) * momentum + grad_weight * g);
      buffer[i] = b_stored;
      const C b = Load(b_stored);
      if constexpr (kNesterov) {
        g = g + momentum * b;
      } else {
        g = b;
      }
    }
    param[i] = Store<T>(p + neg_lr * g);
  }
}

template <class T, bool kDecay, bool kMomentum, bool kNesterov>
void SgdTyped(const TensorBase& param, const TensorBase& grad,
              const TensorBase& buffer,
              const Backend::SgdUpdateScalars& scalars) {
  T* param_data = param.data_as<T>();
  const T* grad_data = grad.data_as<T>();
  T* buffer_data = kMomentum ? buffer.data_as<T>() : nullptr;
  ParallelFor(param.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    SgdRange<T, kDecay, kMomentum, kNesterov>(param_data, grad_data,
                                              buffer_data, begin, end, scalars);
  });
}

// --- Adam -----------------------------------------------------------------

template <class T, bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>
void AdamRange(T* __restrict param, const T* __restrict grad,
               T* __restrict exp_avg, T* __restrict exp_avg_sq,
               T* __restrict max_exp_avg_sq, int64_t begin, int64_t end,
               const Backend::AdamUpdateScalars& s) {
  using C = ComputeType<T>;
  const C weight_decay = static_cast<C>(s.weight_decay);
  const C decay_factor = static_cast<C>(1 - s.lr * s.weight_decay);
  const C beta1 = static_cast<C>(s.beta1);
  const C one_minus_beta1 = static_cast<C>(1 - s.beta1);
  const C beta2 = static_cast<C>(s.beta2);
  const C one_minus_beta2 = static_cast<C>(1 - s.beta2);
  const C eps = static_cast<C>(s.eps);
  const C neg_step_size = static_cast<C>(-s.step_size);
  const C bias_correction2_sqrt = static_cast<C>(s.bias_correction2_sqrt);
  for (int64_t i = begin; i < end; ++i) {
    C p = Load(param[i]);
    C g = Load(grad[i]);
    if constexpr (kL2Decay) g = g + weight_decay * p;
    if constexpr (kDecoupledDecay) p = p * decay_factor;
    // The moments are rounded to their storage type before use, as PyTorch's
    // (which live in the parameter's dtype) are.
    const T m_stored = Store<T>(Load(exp_avg[i]) * beta1 + one_minus_beta1 * g);
    exp_avg[i] = m_stored;
    const C m = Load(m_stored);
    const T v_stored =
        Store<T>(Load(exp_avg_sq[i]) * beta2 + one_minus_beta2 * g * g);
    exp_avg_sq[i] = v_stored;
    C v = Load(v_stored);
    if constexpr (kAmsgrad) {
      const C max_v = Load(max_exp_avg_sq[i]);
      v = max_v > v ? max_v : v;
      max_exp_avg_sq[i] = Store<T>(v);
    }
    const C denom = std::sqrt(v) / bias_correction2_sqrt + eps;
    param[i] = Store<T>(p + neg_step_size * (m / denom));
  }
}

template <class T, bool kL2Decay, bool kDecoupledDecay, bool kAmsgrad>
void AdamTyped(const TensorBase& param, const TensorBase& grad,
               const TensorBase& exp_avg, const TensorBase& exp_avg_sq,
               const TensorBase& max_exp_avg_sq,
               const Backend::AdamUpdateScalars& scalars) {
  T* param_data = param.data_as<T>();
  const T* grad_data = grad.data_as<T>();
  T* exp_avg_data = exp_avg.data_as<T>();
  T* exp_avg_sq_data = exp_avg_sq.data_as<T>();
  T* max_data = kAmsgrad ? max_exp_avg_sq.data_as<T>() : nullptr;
  ParallelFor(param.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    AdamRange<T, kL2Decay, kDecoupledDecay, kAmsgrad>(
        param_data, grad_data, exp_avg_data, exp_avg_sq_data, max_data, begin,
        end, scalars);
  });
}

// SelectFlags() turns three runtime flags into template arguments:
// f.template operator()<a, b, c>().
template <class F>
void SelectFlags(bool a, bool b, bool c, F&& f) {
  if (a) {
    if (b) {
      c ? f.template operator()<true, true, true>()
        : f.template operator()<true, true, false>();
    } else {
      c ? f.template operator()<true, false, true>()
        : f.template operator()<true, false, false>();
    }
  } else {
    if (b) {
      c ? f.template operator()<false, true, true>()
        : f.template operator()<false, true, false>();
    } else {
      c ? f.template operator()<false, false, true>()
        : f.template operator()<false, false, false>();
    }
  }
}

// --- Norms and clipping -----------------------------------------------------

// kNormBlock: elements per partial sum. Fixed blocks summed in order make the
// result independent of the thread count.
constexpr int64_t kNormBlock = int64_t{1} << 15;

template <class T>
double AbsPowerSumBlock(const T* data, int64_t begin, int64_t end, double p) {
  double total = 0;
  if (std::isinf(p)) {
    for (int64_t i = begin; i < end; ++i) {
      const double x = std::fabs(ToDouble(data[i]));
      total = x > total || x != x ? x : total;  // NaN propagates
    }
  } else if (p == 2) {
    for (int64_t i = begin; i < end; ++i) {
      const double x = ToDouble(data[i]);
      total += x * x;
    }
  } else if (p == 1) {
    for (int64_t i = begin; i < end; ++i) total += std::fabs(ToDouble(data[i]));
  } else {
    for (int64_t i = begin; i < end; ++i) {
      total += std::pow(std::fabs(ToDouble(data[i])), p);
    }
  }
  return total;
}

}  // namespace

void SgdUpdateKernel(const TensorBase& param, const TensorBase& grad,
                     const TensorBase& momentum_buffer,
                     const Backend::SgdUpdateScalars& scalars) {
  KINDLING_CHECK(param.is_contiguous(), "cpu SgdUpdate: param %s is strided",
                 param.ToString());
  CheckSameLayout("SgdUpdate", "grad", param, grad);
  const bool momentum = scalars.momentum != 0;
  if (momentum) {
    CheckSameLayout("SgdUpdate", "momentum_buffer", param, momentum_buffer);
  }
  DispatchDType<kFloatingDTypes>(
      param.dtype(), "cpu SgdUpdate", [&]<class T>() {
        SelectFlags(scalars.weight_decay != 0, momentum,
                    momentum && scalars.nesterov,
                    [&]<bool kDecay, bool kMomentum, bool kNesterov>() {
                      SgdTyped<T, kDecay, kMomentum, kNesterov>(
                          param, grad, momentum_buffer, scalars);
                    });
      });
}

void AdamUpdateKernel(const TensorBase& param, const TensorBase& grad,
                      const TensorBase& exp_avg, const TensorBase& exp_avg_sq,
                      const TensorBase& max_exp_avg_sq,
                      const Backend::AdamUpdateScalars& scalars) {
  KINDLING_CHECK(param.is_contiguous(), "cpu AdamUpdate: param %s is strided",
                 param.ToString());
  CheckSameLayout("AdamUpdate", "grad", param, grad);
  CheckSameLayout("AdamUpdate", "exp_avg", param, exp_avg);
  CheckSameLayout("AdamUpdate", "exp_avg_sq", param, exp_avg_sq);
  if (scalars.amsgrad) {
    CheckSameLayout("AdamUpdate", "max_exp_avg_sq", param, max_exp_avg_sq);
  }
  const bool decay = scalars.weight_decay != 0;
  DispatchDType<kFloatingDTypes>(
      param.dtype(), "cpu AdamUpdate", [&]<class T>() {
        SelectFlags(decay && !scalars.decoupled_weight_decay,
                    decay && scalars.decoupled_weight_decay, scalars.amsgrad,
                    [&]<bool kL2, bool kDecoupled, bool kAmsgrad>() {
                      AdamTyped<T, kL2, kDecoupled, kAmsgrad>(
                          param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq,
                          scalars);
                    });
      });
}

double AbsPowerSumKernel(const TensorBase& in, double p) {
  KINDLING_CHECK(in.is_contiguous(), "cpu AbsPowerSum: %s is strided",
                 in.ToString());
  KINDLING_CHECK(p > 0, "cpu AbsPowerSum: p = %g must be positive", p);
  const int64_t count = in.numel();
  const int64_t blocks = (count + kNormBlock - 1) / kNormBlock;
  std::vector<double> partial(blocks, 0.0);
  DispatchDType<kFloatingDTypes>(in.dtype(), "cpu AbsPowerSum", [&]<class T>() {
    const T* data = in.data_as<T>();
    ParallelFor(blocks, 2, [&](int64_t first, int64_t last) {
      for (int64_t block = first; block < last; ++block) {
        const int64_t begin = block * kNormBlock;
        const int64_t end = std::min(count, begin + kNormBlock);
        partial[block] = AbsPowerSumBlock(data, begin, end, p);
      }
    });
  });
  double total = 0;
  for (double part : partial) {
    if (std::isinf(p)) {
      total = part > total || part != part ? part : total;
    } else {
      total += part;
    }
  }
  return total;
}

void ScaleClampKernel(const TensorBase& inout, double scale, double max_abs) {
  KINDLING_CHECK(inout.is_contiguous(), "cpu ScaleClamp: %s is strided",
                 inout.ToString());
  DispatchDType<kFloatingDTypes>(
      inout.dtype(), "cpu ScaleClamp", [&]<class T>() {
        using C = ComputeType<T>;
        T* data = inout.data_as<T>();
        const C factor = static_cast<C>(scale);
        const C high = static_cast<C>(max_abs);
        const C low = -high;
        ParallelFor(
            inout.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
              for (int64_t i = begin; i < end; ++i) {
                const C x = Load(data[i]) * factor;
                // Comparisons keep NaN as NaN, like torch.clamp.
                data[i] = Store<T>(x < low ? low : (x > high ? high : x));
              }
            });
      });
}

}  // namespace kindling::cpu
