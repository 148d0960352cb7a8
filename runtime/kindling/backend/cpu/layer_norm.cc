// Layer normalization on the CPU (Backend::LayerNorm, LayerNormBackward).
//
// Shapes: x [R, D] rows, gamma and beta [D], mean and rstd [R], all
// contiguous; T is float or double.
//
// Forward, one row at a time, rows split over threads: three passes over
// the row (its mean, the variance around that mean, the output), which for
// rows up to tens of KiB run from L1/L2, so x is read from memory once. The
// sums accumulate in double in kLanes independent lanes (loops gcc
// vectorizes at -O3 without reassociating anything), so a float row of any
// length keeps float precision; a two-pass variance never cancels
// catastrophically as E[x^2] - E[x]^2 does.
//
// Backward: per row, the two sums of dx's formula (again in double), then
// dx in one more pass. dgamma and dbeta are column sums over rows: each
// fixed chunk of rows (LayerNormChunks, a function of R and D only) sums its
// rows into its own double partial row, and the partials are added in chunk
// order afterwards, so the result is the same for any thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"
#include "kindling/tensor/dtype_dispatch.h"

namespace kindling::cpu {
namespace {

// kLanes independent accumulators per sum: two AVX2 registers of doubles
// per sum on gcc's vectorized form, enough to hide the add latency.
constexpr int kLanes = 8;

// RowSum() is the sum of term(i) for i in [0, n), in double.
template <class Term>
inline double RowSum(int64_t n, const Term& term) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += term(i + j);
  }
  double total = 0;
  for (; i < n; ++i) total += term(i);
  for (int j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

// RowSums2() is RowSum() of two terms at once, one pass over the row.
template <class Term>
inline void RowSums2(int64_t n, const Term& term, double* first,
                     double* second) {
  double lanes_a[kLanes] = {};
  double lanes_b[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      double a, b;
      term(i + j, &a, &b);
      lanes_a[j] += a;
      lanes_b[j] += b;
    }
  }
  double total_a = 0, total_b = 0;
  for (; i < n; ++i) {
    double a, b;
    term(i, &a, &b);
    total_a += a;
    total_b += b;
  }
  for (int j = 0; j < kLanes; ++j) {
    total_a += lanes_a[j];
    total_b += lanes_b[j];
  }
  *first = total_a;
  *second = total_b;
}

// Parameters: gamma and beta as pointers, ones and zeros standing in for an
// undefined one (filled once per call, not per row).
template <class T>
struct Parameters {
  Parameters(const TensorBase& gamma_tensor, const TensorBase& beta_tensor,
             int64_t d) {
    if (gamma_tensor.defined()) {
      gamma = gamma_tensor.data_as<const T>();
    } else {
      ones.assign(d, T(1));
      gamma = ones.data();
    }
    if (beta_tensor.defined()) {
      beta = beta_tensor.data_as<const T>();
    } else {
      zeros.assign(d, T(0));
      beta = zeros.data();
    }
  }
  const T* gamma;
  const T* beta;
  std::vector<T> ones;
  std::vector<T> zeros;
};

// LayerNormRow(): y = (x - mean) * rstd * gamma + beta for one row of d,
// returning its mean and rstd.
template <class T>
void LayerNormRow(T* __restrict y, const T* __restrict x,
                  const T* __restrict gamma, const T* __restrict beta,
                  int64_t d, double epsilon, T* mean_out, T* rstd_out) {
  const double mean_value =
      RowSum(d, [&](int64_t i) { return static_cast<double>(x[i]); }) /
      static_cast<double>(d);
  const T mean = static_cast<T>(mean_value);
  // Squares of the T differences, each rounded once, summed in double.
  const double variance =
      RowSum(d,
             [&](int64_t i) {
               const T centered = x[i] - mean;
               return static_cast<double>(centered * centered);
             }) /
      static_cast<double>(d);
  const T rstd = static_cast<T>(1.0 / std::sqrt(variance + epsilon));
  for (int64_t i = 0; i < d; ++i) {
    y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

template <class T>
void LayerNormTyped(const TensorBase& out, const TensorBase& mean,
                    const TensorBase& rstd, const TensorBase& input,
                    const TensorBase& gamma, const TensorBase& beta,
                    double epsilon) {
  const int64_t rows = input.shape()[0];
  const int64_t d = input.shape()[1];
  if (rows == 0 || d == 0) return;
  const Parameters<T> parameters(gamma, beta, d);
  const T* x = input.data_as<const T>();
  T* y = out.data_as<T>();
  T* means = mean.data_as<T>();
  T* rstds = rstd.data_as<T>();
  ParallelFor(rows, std::max<int64_t>(1, kElementGrain / d),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  LayerNormRow<T>(y + r * d, x + r * d, parameters.gamma,
                                  parameters.beta, d, epsilon, means + r,
                                  rstds + r);
                }
              });
}

// LayerNormChunks: the fixed row chunks of the backward's column sums. A
// chunk holds at least kChunkElements elements (so its partial row costs
// little next to its rows) and there are at most kMaxChunks (so the
// partials stay small); both depend on R and D only.
struct LayerNormChunks {
  static constexpr int64_t kChunkElements = int64_t{1} << 14;
  static constexpr int64_t kMaxChunks = 128;

  LayerNormChunks(int64_t rows, int64_t d) {
    const int64_t min_rows = (kChunkElements + d - 1) / d;
    rows_per_chunk =
        std::max<int64_t>({1, min_rows, (rows + kMaxChunks - 1) / kMaxChunks});
    count = (rows + rows_per_chunk - 1) / rows_per_chunk;
  }
  int64_t rows_per_chunk;
  int64_t count;
};

// LayerNormBackwardRows(): rows [begin, end). kInput: write dx; kParameters:
// add dy * xhat and dy into the chunk's partial rows (double).
template <class T, bool kInput, bool kParameters>
void LayerNormBackwardRows(int64_t begin, int64_t end, int64_t d, T* dx_all,
                           const T* dy_all, const T* x_all, const T* means,
                           const T* rstds, const T* __restrict gamma,
                           double* __restrict gamma_partial,
                           double* __restrict beta_partial) {
  const double inverse_d = 1.0 / static_cast<double>(d);
  for (int64_t r = begin; r < end; ++r) {
    const T* __restrict x = x_all + r * d;
    const T* __restrict dy = dy_all + r * d;
    const T mean = means[r];
    const T rstd = rstds[r];
    if constexpr (kInput) {
      T* __restrict dx = dx_all + r * d;
      double sum_g, sum_g_xhat;
      RowSums2(
          d,
          [&](int64_t i, double* g_term, double* g_xhat_term) {
            const T g = dy[i] * gamma[i];
            *g_term = static_cast<double>(g);
            *g_xhat_term = static_cast<double>(g * ((x[i] - mean) * rstd));
          },
          &sum_g, &sum_g_xhat);
      const T mean_g = static_cast<T>(sum_g * inverse_d);
      const T mean_g_xhat = static_cast<T>(sum_g_xhat * inverse_d);
      for (int64_t i = 0; i < d; ++i) {
        const T xhat = (x[i] - mean) * rstd;
        dx[i] = rstd * (dy[i] * gamma[i] - mean_g - xhat * mean_g_xhat);
        if constexpr (kParameters) {
          gamma_partial[i] += static_cast<double>(dy[i] * xhat);
          beta_partial[i] += static_cast<double>(dy[i]);
        }
      }
    } else {
      for (int64_t i = 0; i < d; ++i) {
        const T xhat = (x[i] - mean) * rstd;
        gamma_partial[i] += static_cast<double>(dy[i] * xhat);
        beta_partial[i] += static_cast<double>(dy[i]);
      }
    }
  }
}

template <class T>
void LayerNormBackwardTyped(const TensorBase& input_grad,
                            const TensorBase& gamma_grad,
                            const TensorBase& beta_grad, const TensorBase& grad,
                            const TensorBase& input, const TensorBase& mean,
                            const TensorBase& rstd, const TensorBase& gamma) {
  const int64_t rows = input.shape()[0];
  const int64_t d = input.shape()[1];
  if (rows == 0 || d == 0) return;
  const Parameters<T> parameters(gamma, TensorBase(), d);
  const bool with_input = input_grad.defined();
  const bool with_parameters = gamma_grad.defined() || beta_grad.defined();
  const LayerNormChunks chunks(rows, d);
  // [chunks, D] partial sums of dy * xhat, then of dy.
  std::vector<double> partials;
  if (with_parameters) partials.assign(2 * chunks.count * d, 0.0);
  T* dx = with_input ? input_grad.data_as<T>() : nullptr;
  const T* dy = grad.data_as<const T>();
  const T* x = input.data_as<const T>();
  const T* means = mean.data_as<const T>();
  const T* rstds = rstd.data_as<const T>();
  const int64_t chunk_grain =
      std::max<int64_t>(1, kElementGrain / (chunks.rows_per_chunk * d));
  ParallelFor(chunks.count, chunk_grain, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const int64_t begin = c * chunks.rows_per_chunk;
      const int64_t end = std::min(rows, begin + chunks.rows_per_chunk);
      double* gamma_partial =
          with_parameters ? partials.data() + c * d : nullptr;
      double* beta_partial =
          with_parameters ? partials.data() + (chunks.count + c) * d : nullptr;
      if (with_input && with_parameters) {
        LayerNormBackwardRows<T, true, true>(begin, end, d, dx, dy, x, means,
                                             rstds, parameters.gamma,
                                             gamma_partial, beta_partial);
      } else if (with_input) {
        LayerNormBackwardRows<T, true, false>(begin, end, d, dx, dy, x, means,
                                              rstds, parameters.gamma,
                                              gamma_partial, beta_partial);
      } else {
        LayerNormBackwardRows<T, false, true>(begin, end, d, dx, dy, x, means,
                                              rstds, parameters.gamma,
                                              gamma_partial, beta_partial);
      }
    }
  });
  if (!with_parameters) return;
  // Column sums of the partials in chunk order, columns split over threads.
  T* gamma_out = gamma_grad.defined() ? gamma_grad.data_as<T>() : nullptr;
  T* beta_out = beta_grad.defined() ? beta_grad.data_as<T>() : nullptr;
  const double* gamma_partials = partials.data();
  const double* beta_partials = partials.data() + chunks.count * d;
  const int64_t column_grain =
      std::max<int64_t>(1, kElementGrain / (2 * chunks.count));
  ParallelFor(d, column_grain, [&](int64_t begin, int64_t end) {
    constexpr int64_t kBlock = 256;
    double gamma_sum[kBlock];
    double beta_sum[kBlock];
    for (int64_t j0 = begin; j0 < end; j0 += kBlock) {
      const int64_t width = std::min(kBlock, end - j0);
      std::fill_n(gamma_sum, width, 0.0);
      std::fill_n(beta_sum, width, 0.0);
      for (int64_t c = 0; c < chunks.count; ++c) {
        const double* g = gamma_partials + c * d + j0;
        const double* b = beta_partials + c * d + j0;
        for (int64_t j = 0; j < width; ++j) {
          gamma_sum[j] += g[j];
          beta_sum[j] += b[j];
        }
      }
      for (int64_t j = 0; j < width; ++j) {
        if (gamma_out != nullptr)
          gamma_out[j0 + j] = static_cast<T>(gamma_sum[j]);
        if (beta_out != nullptr) beta_out[j0 + j] = static_cast<T>(beta_sum[j]);
      }
    }
  });
}

}  // namespace

void LayerNormKernel(const TensorBase& out, const TensorBase& mean,
                     const TensorBase& rstd, const TensorBase& input,
                     const TensorBase& gamma, const TensorBase& beta,
                     double epsilon) {
  DispatchF32F64(input.dtype(), "cpu", "layer_norm", [&]<class T>() {
    LayerNormTyped<T>(out, mean, rstd, input, gamma, beta, epsilon);
  });
}

void LayerNormBackwardKernel(const TensorBase& input_grad,
                             const TensorBase& gamma_grad,
                             const TensorBase& beta_grad,
                             const TensorBase& grad, const TensorBase& input,
                             const TensorBase& mean, const TensorBase& rstd,
                             const TensorBase& gamma) {
  DispatchF32F64(input.dtype(), "cpu", "layer_norm backward", [&]<class T>() {
    LayerNormBackwardTyped<T>(input_grad, gamma_grad, beta_grad, grad, input,
                              mean, rstd, gamma);
  });
}

}  // namespace kindling::cpu
