// Gradient-clipping kernels for the CPU backend (see clip_kernels.h).
#include "kindling/backend/cpu/clip_kernels.h"

#include <cblas.h>

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
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cpu {
namespace {

// --- Norms and clipping -----------------------------------------------------

// kNormBlock: elements per partial sum. Fixed blocks summed in order make the
// result independent of the thread count.
constexpr int64_t kNormBlock = int64_t{1} << 15;

// SquaresOfFloats() is the sum of x[i]^2 over n floats in f64. An f32
// square is exact in f64 (two 24-bit significands make at most 48 bits), so
// each term is exact and only the adds round, in sixteen fixed lanes: the same
// bits on every x86 CPU, vectorized or not, FMA or not. OpenBLAS's dsdot,
// used before, squares in f32 on its Zen kernel (0.3.21 on an AMD EPYC of
// family 25, AVX2 only: 1.8e-9 relative error on optim_bench's 16M values,
// against 8e-15 here) and took 1.17x this loop's time over the same 32K
// blocks there (median of 5, one thread). On optim_bench's BM_GradientNorm
// there, both threads, this norm takes 0.87-0.88x the time of OpenBLAS's
// snrm2 (whose f32 result misses the f64 contract). NaN and inf come out as
// the in-order loop's: squares are never negative, so no inf - inf.
double SquaresOfFloats(const float* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      const double value = x[i + lane];
      lanes[lane] += value * value;
    }
  }
  double total = 0;
  for (const double lane : lanes) total += lane;
  for (; i < n; ++i) {
    const double value = x[i];
    total += value * value;
  }
  return total;
}

template <class T>
double AbsPowerSumBlock(const T* data, int64_t begin, int64_t end, double p) {
  double total = 0;
  if (std::isinf(p)) {
    for (int64_t i = begin; i < end; ++i) {
      const double x = std::fabs(ToDouble(data[i]));
      total = x > total || x != x ? x : total;  // NaN propagates
    }
  } else if (p == 2) {
    if constexpr (std::is_same_v<T, float>) {
      return SquaresOfFloats(data + begin, end - begin);
    } else if constexpr (std::is_same_v<T, double>) {
      // OpenBLAS's ddot of the block with itself; a non-finite block takes
      // the loop, whose NaN and inf handling is specified.
      const double sum = cblas_ddot(static_cast<int>(end - begin), data + begin,
                                    1, data + begin, 1);
      if (std::isfinite(sum)) return sum;
    }
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
        // f64 computes in f64, the other floats in f32.
        using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
        T* data = inout.data_as<T>();
        const C factor = static_cast<C>(scale);
        const C high = static_cast<C>(max_abs);
        const C low = -high;
        ParallelFor(inout.numel(), kElementGrain,
                    [&](int64_t begin, int64_t end) {
                      for (int64_t i = begin; i < end; ++i) {
                        // NaN stays NaN, like torch.clamp.
                        data[i] = Convert<T>(element_math::Clamp(
                            Convert<C>(data[i]) * factor, low, high));
                      }
                    });
      });
}

}  // namespace kindling::cpu
