// Layer normalization on the CPU (Backend::LayerNorm, LayerNormBackward).
//
// Shapes: x, y, dy, dx [R, D] rows; gamma, beta [D]; mean, rstd [R]; all
// contiguous. T is float or double.
//
// Forward, one row at a time, rows split over threads: three passes over
// the row (its mean, the variance around that mean, the output), which for
// rows up to tens of KiB run from L1/L2, so x is read from memory once.
// Backward, per row: sum(g) and sum(g * xhat) (g = dy * gamma), then dx.
// dgamma and dbeta are column sums over rows: each fixed chunk of rows
// (LayerNormChunks, a function of R and D only) adds its rows into its own
// double partial row, and the partials are added in chunk order at the end,
// so every result is the same for any thread count.
//
// Row sums are in double. Floats go through AVX2 (vector_math.h): 32
// elements summed in four float registers, each such block widened into
// double lanes (as reduce.cc's SumRow does), so a row of any length keeps
// float precision at float speed. Doubles sum in kLanes independent lanes,
// loops gcc vectorizes at -O3 without reassociating anything. The variance
// is taken around the mean (two passes), never as E[x^2] - E[x]^2, which
// cancels catastrophically when the mean is large next to the spread.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/core/check.h"
#include "kindling/tensor/dtype_dispatch.h"

namespace kindling::cpu {
namespace {

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

// --- Floats (AVX2)
// -------------------------------------------------------------

// Load8() is x[i..i+8), only `lanes` of them at a row's end, `fill` in the
// other lanes.
inline __m256 Load8(const float* x, int64_t i, int64_t lanes, float fill) {
  return lanes == 8 ? _mm256_loadu_ps(x + i) : LoadPartial(x + i, lanes, fill);
}

// SumFloats() is the sum over i = 0, 8, 16, ... < n of the eight lanes
// term(i, lanes) returns (elements i..i+8; only `lanes` < 8 at the end, the
// others must be 0), in double: 32 elements at a time added in float, each
// block's sum widened into double lanes.
template <class Term>
inline double SumFloats(int64_t n, const Term& term) {
  __m256d total = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 a = _mm256_add_ps(term(i, 8), term(i + 8, 8));
    const __m256 b = _mm256_add_ps(term(i + 16, 8), term(i + 24, 8));
    total = AddWidened(total, _mm256_add_ps(a, b));
  }
  for (; i < n; i += 8) {
    total = AddWidened(total, term(i, std::min<int64_t>(8, n - i)));
  }
  return Sum4d(total);
}

// SumFloats2() is SumFloats() of two terms in one pass: term(i, lanes,
// &first, &second) sets both.
template <class Term>
inline void SumFloats2(int64_t n, const Term& term, double* first_sum,
                       double* second_sum) {
  __m256d first_total = _mm256_setzero_pd();
  __m256d second_total = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 first_a, second_a, first_b, second_b;
    term(i, 8, &first_a, &second_a);
    term(i + 8, 8, &first_b, &second_b);
    first_total = AddWidened(first_total, _mm256_add_ps(first_a, first_b));
    second_total = AddWidened(second_total, _mm256_add_ps(second_a, second_b));
  }
  for (; i < n; i += 8) {
    __m256 first, second;
    term(i, std::min<int64_t>(8, n - i), &first, &second);
    first_total = AddWidened(first_total, first);
    second_total = AddWidened(second_total, second);
  }
  *first_sum = Sum4d(first_total);
  *second_sum = Sum4d(second_total);
}

// LayerNormRowF32(): y = (x - mean) * rstd * gamma + beta for one row of d,
// writing its mean and rstd. With `stream`, y goes out with non-temporal
// stores (the caller fences).
void LayerNormRowF32(float* y, const float* x, const float* gamma,
                     const float* beta, int64_t d, double epsilon, bool stream,
                     float* mean_out, float* rstd_out) {
  const double sum = SumFloats(
      d, [&](int64_t i, int64_t lanes) { return Load8(x, i, lanes, 0.0f); });
  const float mean = static_cast<float>(sum / static_cast<double>(d));
  const __m256 mean8 = _mm256_set1_ps(mean);
  // Padding lanes load the mean: their difference is 0.
  const double squares = SumFloats(d, [&](int64_t i, int64_t lanes) {
    const __m256 centered = _mm256_sub_ps(Load8(x, i, lanes, mean), mean8);
    return _mm256_mul_ps(centered, centered);
  });
  const float rstd = static_cast<float>(
      1.0 / std::sqrt(squares / static_cast<double>(d) + epsilon));
  const __m256 rstd8 = _mm256_set1_ps(rstd);
  WriteFloats(y, d, stream, [&](int64_t i, int64_t lanes) {
    const __m256 xhat =
        _mm256_mul_ps(_mm256_sub_ps(Load8(x, i, lanes, 0.0f), mean8), rstd8);
    return _mm256_fmadd_ps(xhat, Load8(gamma, i, lanes, 0.0f),
                           Load8(beta, i, lanes, 0.0f));
  });
  *mean_out = mean;
  *rstd_out = rstd;
}

// LayerNormBackwardRowF32(): for one row, dx (when `dx` is not null) and
// the row's dy * xhat and dy added to the partial rows (when they are not
// null).
void LayerNormBackwardRowF32(float* dx, const float* dy, const float* x,
                             float mean, float rstd, const float* gamma,
                             int64_t d, bool stream, double* gamma_partial,
                             double* beta_partial) {
  const __m256 mean8 = _mm256_set1_ps(mean);
  const __m256 rstd8 = _mm256_set1_ps(rstd);
  // xhat of x[i..i+8); padding lanes (x filled with the mean) give 0.
  const auto xhat = [&](int64_t i, int64_t lanes) {
    return _mm256_mul_ps(_mm256_sub_ps(Load8(x, i, lanes, mean), mean8), rstd8);
  };
  if (dx != nullptr) {
    double sum_g, sum_g_xhat;
    SumFloats2(
        d,
        [&](int64_t i, int64_t lanes, __m256* g_term, __m256* g_xhat_term) {
          const __m256 g = _mm256_mul_ps(Load8(dy, i, lanes, 0.0f),
                                         Load8(gamma, i, lanes, 0.0f));
          *g_term = g;
          *g_xhat_term = _mm256_mul_ps(g, xhat(i, lanes));
        },
        &sum_g, &sum_g_xhat);
    const __m256 mean_g =
        _mm256_set1_ps(static_cast<float>(sum_g / static_cast<double>(d)));
    const __m256 mean_g_xhat =
        _mm256_set1_ps(static_cast<float>(sum_g_xhat / static_cast<double>(d)));
    WriteFloats(dx, d, stream, [&](int64_t i, int64_t lanes) {
      const __m256 g = _mm256_mul_ps(Load8(dy, i, lanes, 0.0f),
                                     Load8(gamma, i, lanes, 0.0f));
      // rstd * (g - mean(g) - xhat * mean(g * xhat))
      return _mm256_mul_ps(rstd8, _mm256_fnmadd_ps(xhat(i, lanes), mean_g_xhat,
                                                   _mm256_sub_ps(g, mean_g)));
    });
  }
  if (gamma_partial == nullptr) return;
  // Columns in double: each 8 floats as two 4-double halves.
  const auto add_widened = [](double* partial, __m256 value) {
    _mm256_storeu_pd(
        partial, _mm256_add_pd(_mm256_loadu_pd(partial),
                               _mm256_cvtps_pd(_mm256_castps256_ps128(value))));
    _mm256_storeu_pd(
        partial + 4,
        _mm256_add_pd(_mm256_loadu_pd(partial + 4),
                      _mm256_cvtps_pd(_mm256_extractf128_ps(value, 1))));
  };
  int64_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 g = _mm256_loadu_ps(dy + i);
    add_widened(gamma_partial + i, _mm256_mul_ps(g, xhat(i, 8)));
    add_widened(beta_partial + i, g);
  }
  for (; i < d; ++i) {
    gamma_partial[i] += static_cast<double>(dy[i] * ((x[i] - mean) * rstd));
    beta_partial[i] += static_cast<double>(dy[i]);
  }
}

// --- Doubles (and the generic form)
// -------------------------------------------

// kLanes independent accumulators per double sum: two AVX2 registers on
// gcc's vectorized form, enough to hide the add latency.
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

void LayerNormRowF64(double* __restrict y, const double* __restrict x,
                     const double* __restrict gamma,
                     const double* __restrict beta, int64_t d, double epsilon,
                     double* mean_out, double* rstd_out) {
  const double mean = RowSum(d, [&](int64_t i) { return x[i]; }) / d;
  const double variance = RowSum(d,
                                 [&](int64_t i) {
                                   const double centered = x[i] - mean;
                                   return centered * centered;
                                 }) /
                          d;
  const double rstd = 1.0 / std::sqrt(variance + epsilon);
  for (int64_t i = 0; i < d; ++i) {
    y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

void LayerNormBackwardRowF64(double* __restrict dx, const double* __restrict dy,
                             const double* __restrict x, double mean,
                             double rstd, const double* __restrict gamma,
                             int64_t d, double* __restrict gamma_partial,
                             double* __restrict beta_partial) {
  if (dx != nullptr) {
    // Two sums, two passes over the (cached) row: each is a plain RowSum.
    const double mean_g =
        RowSum(d, [&](int64_t i) { return dy[i] * gamma[i]; }) / d;
    const double mean_g_xhat =
        RowSum(d,
               [&](int64_t i) {
                 return dy[i] * gamma[i] * ((x[i] - mean) * rstd);
               }) /
        d;
    for (int64_t i = 0; i < d; ++i) {
      const double xhat = (x[i] - mean) * rstd;
      dx[i] = rstd * (dy[i] * gamma[i] - mean_g - xhat * mean_g_xhat);
    }
  }
  if (gamma_partial == nullptr) return;
  for (int64_t i = 0; i < d; ++i) {
    gamma_partial[i] += dy[i] * ((x[i] - mean) * rstd);
    beta_partial[i] += dy[i];
  }
}

// LayerNormRow / LayerNormBackwardRow: the row functions by element type.
void LayerNormRow(float* y, const float* x, const float* gamma,
                  const float* beta, int64_t d, double epsilon, bool stream,
                  float* mean, float* rstd) {
  LayerNormRowF32(y, x, gamma, beta, d, epsilon, stream, mean, rstd);
}
void LayerNormRow(double* y, const double* x, const double* gamma,
                  const double* beta, int64_t d, double epsilon,
                  bool /*stream*/, double* mean, double* rstd) {
  LayerNormRowF64(y, x, gamma, beta, d, epsilon, mean, rstd);
}
void LayerNormBackwardRow(float* dx, const float* dy, const float* x,
                          float mean, float rstd, const float* gamma, int64_t d,
                          bool stream, double* gamma_partial,
                          double* beta_partial) {
  LayerNormBackwardRowF32(dx, dy, x, mean, rstd, gamma, d, stream,
                          gamma_partial, beta_partial);
}
void LayerNormBackwardRow(double* dx, const double* dy, const double* x,
                          double mean, double rstd, const double* gamma,
                          int64_t d, bool /*stream*/, double* gamma_partial,
                          double* beta_partial) {
  LayerNormBackwardRowF64(dx, dy, x, mean, rstd, gamma, d, gamma_partial,
                          beta_partial);
}

// --- The kernels
// ----------------------------------------------------------------

// Float outputs (y, dx) this large go out with non-temporal stores (as in
// elementwise.cc and softmax.cc): they do not stay in cache anyway,
// and a normal store first reads the line it overwrites. On [4096, 1024]
// the forward took 2.0 ms streaming against 3.3 ms without.
constexpr int64_t kStreamingBytes = int64_t{4} << 20;

// Rows split over threads from kHeavyElementGrain elements, forward and
// backward (two passes over the row and the output forward; two sums and dx
// backward). With kElementGrain, the MLP example's [128, 256] layer norm ran
// on one thread while the other idled; at the heavy grain its forward took
// 0.80x the time and its forward and backward through autodiff 0.78-0.79x
// (13.4-13.8 against 16.7-16.9 us, 39.5-41.5 against 49.8-53.3 us;
// 2 threads, AMD EPYC Zen 3, two standalone runs of 41 alternating rounds
// of 200 calls, medians). The row chunks of the backward's column sums are
// fixed by R and D alone, so the grain changes no bits.

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
  const bool stream =
      rows * d * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
  ParallelFor(rows, std::max<int64_t>(1, kHeavyElementGrain / d),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  LayerNormRow(y + r * d, x + r * d, parameters.gamma,
                               parameters.beta, d, epsilon, stream, means + r,
                               rstds + r);
                }
                // Order the streaming stores before the join.
                if (stream) _mm_sfence();
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
  const bool with_parameters = gamma_grad.defined() || beta_grad.defined();
  const LayerNormChunks chunks(rows, d);
  // Per chunk c, the partial sums of dy * xhat at partials[2c * stride] and
  // of dy at partials[(2c + 1) * stride]. The 8 padding doubles keep the two
  // rows a chunk updates together off the same address modulo 4 KiB, where
  // each load of one would wait on the store just made to the other (4K
  // aliasing: the f32 backward of [4096, 1024] took 14.5 ms on one thread
  // with the rows 1 MiB apart, 6 ms padded).
  const int64_t stride = d + 8;
  std::vector<double> partials;
  if (with_parameters) partials.assign(2 * chunks.count * stride, 0.0);
  T* dx = input_grad.defined() ? input_grad.data_as<T>() : nullptr;
  const T* dy = grad.data_as<const T>();
  const T* x = input.data_as<const T>();
  const T* means = mean.data_as<const T>();
  const T* rstds = rstd.data_as<const T>();
  const bool stream =
      dx != nullptr &&
      rows * d * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
  const int64_t chunk_grain =
      std::max<int64_t>(1, kHeavyElementGrain / (chunks.rows_per_chunk * d));
  ParallelFor(chunks.count, chunk_grain, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c) {
      const int64_t begin = c * chunks.rows_per_chunk;
      const int64_t end = std::min(rows, begin + chunks.rows_per_chunk);
      double* gamma_partial =
          with_parameters ? partials.data() + 2 * c * stride : nullptr;
      double* beta_partial =
          with_parameters ? partials.data() + (2 * c + 1) * stride : nullptr;
      for (int64_t r = begin; r < end; ++r) {
        LayerNormBackwardRow(dx != nullptr ? dx + r * d : nullptr, dy + r * d,
                             x + r * d, means[r], rstds[r], parameters.gamma, d,
                             stream, gamma_partial, beta_partial);
      }
    }
    if (stream) _mm_sfence();  // order the streaming stores before the join
  });
  if (!with_parameters) return;
  // Column sums of the partials in chunk order, columns split over threads.
  T* gamma_out = gamma_grad.defined() ? gamma_grad.data_as<T>() : nullptr;
  T* beta_out = beta_grad.defined() ? beta_grad.data_as<T>() : nullptr;

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
        const double* g = partials.data() + 2 * c * stride + j0;
        const double* b = g + stride;
        for (int64_t j = 0; j < width; ++j) {
          gamma_sum[j] += g[j];
          beta_sum[j] += b[j];
        }
      }
      for (int64_t j = 0; j < width; ++j) {
        if (gamma_out != nullptr) {
          gamma_out[j0 + j] = static_cast<T>(gamma_sum[j]);
        }
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
  DispatchDType<kF32F64>(input.dtype(), "cpu layer_norm", [&]<class T>() {
    LayerNormTyped<T>(out, mean, rstd, input, gamma, beta, epsilon);
  });
}

void LayerNormBackwardKernel(const TensorBase& input_grad,
                             const TensorBase& gamma_grad,
                             const TensorBase& beta_grad,
                             const TensorBase& grad, const TensorBase& input,
                             const TensorBase& mean, const TensorBase& rstd,
                             const TensorBase& gamma) {
  DispatchDType<kF32F64>(
      input.dtype(), "cpu layer_norm backward", [&]<class T>() {
        LayerNormBackwardTyped<T>(input_grad, gamma_grad, beta_grad, grad,
                                  input, mean, rstd, gamma);
      });
}

}  // namespace kindling::cpu
