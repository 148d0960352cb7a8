// Softmax and log_softmax on the CPU (Backend::Softmax).
//
// The same two layouts as the reductions (reduce_layout.h): along the last
// axis each row is a contiguous pass (f32 with AVX2/AVX-512 exponentials,
// vector_math.h); along another axis float columns are walked in blocks
// with the columns in vector registers, or, for long columns of wide rows,
// streamed in spans of columns with an online max. The max is subtracted
// first, so exp never overflows, and the sums are taken in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/reduce_layout.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// Softmax of x[k * stride], k < n, into y (same stride); max-subtracted so
// exp never overflows, sums in double. The scalar path, for doubles.
template <class T>
void SoftmaxLine(T* y, const T* x, int64_t n, int64_t stride, bool log) {
  T max_value = x[0];
  for (int64_t k = 1; k < n; ++k) {
    const T v = x[k * stride];
    max_value = v > max_value ? v : max_value;
  }
  if (std::isinf(max_value) && max_value < 0) max_value = 0;  // all -inf
  double sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const T e = std::exp(x[k * stride] - max_value);
    y[k * stride] = e;
    sum += e;
  }
  if (log) {
    // (x - max) is exact enough in T; subtracting log(sum) in double rounds
    // once, where folding max + log(sum) into one T would lose its low bits.
    const double log_sum = std::log(sum);
    for (int64_t k = 0; k < n; ++k) {
      y[k * stride] = static_cast<T>(
          static_cast<double>(x[k * stride] - max_value) - log_sum);
    }
    return;
  }
  const T scale = static_cast<T>(1.0 / sum);
  for (int64_t k = 0; k < n; ++k) y[k * stride] *= scale;
}

// --- Float softmax ---------------------------------------------------------

// Softmax work below this many elements stays on one thread.
constexpr int64_t kSoftmaxGrain = int64_t{1} << 13;

// Rows up to this long compute e^(x - max) into a stack buffer when the
// output streams, so y is written once, with non-temporal stores.
constexpr int64_t kSoftmaxBuffer = 4096;

// Outputs this large stream (as in elementwise.cc).
constexpr int64_t kSoftmaxStreamingBytes = int64_t{4} << 20;

// LoadLanes() is the `lanes` (<= 8) floats at p, `fill` in the lanes
// beyond; StoreLanes() writes only those lanes.
inline __m256 LoadLanes(const float* p, int64_t lanes, float fill) {
  return lanes == 8 ? _mm256_loadu_ps(p) : LoadPartial(p, lanes, fill);
}
inline void StoreLanes(float* p, int64_t lanes, __m256 value) {
  if (lanes == 8) {
    _mm256_storeu_ps(p, value);
  } else {
    StorePartial(p, lanes, value);
  }
}

// LogSum is log(sum) split into floats, high + low, so that
// (x - max - high) - low rounds about once, like SoftmaxLine's double
// subtraction, at two float operations a vector.
struct LogSum {
  explicit LogSum(double log_sum)
      : high(static_cast<float>(log_sum)),
        low(static_cast<float>(log_sum - static_cast<double>(high))) {}
  float high;
  float low;
};

// LogSubtract() is (x - max - high) - low per lane.
inline __m256 LogSubtract(__m256 x, __m256 max, __m256 high, __m256 low) {
  return _mm256_sub_ps(_mm256_sub_ps(_mm256_sub_ps(x, max), high), low);
}

// SoftmaxExps16() is SoftmaxRowF32's exponential pass over the first
// n / 16 * 16 elements on sixteen lanes (REQUIRES: HasAvx512()): the same
// e^(x - max) values (Exp16 gives Exp8's bits), written to `exps` unless
// `log`, and added to *sum eight at a time in the eight-lane loop's order,
// so the row's result does not depend on the path. Returns how many
// elements it did.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 int64_t SoftmaxExps16(float* exps, const float* x, int64_t n,
                                      float max_value, bool log, __m256d* sum) {
  const __m512 max = _mm512_set1_ps(max_value);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), max));
    *sum = AddWidened(*sum, _mm512_castps512_ps256(e));
    *sum = AddWidened(
        *sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
    if (!log) _mm512_storeu_ps(exps + i, e);
  }
  return i;
}
KINDLING_AVX512_END

// SoftmaxRowF32(): softmax (or log_softmax) of contiguous x[0..n) into y,
// in three passes: max; e^(x - max) and its sum (into y, or `buffer` when
// streaming a row that fits); scale (or subtract the log-sum). Returns with
// streaming stores possibly pending (the caller fences).
void SoftmaxRowF32(float* y, const float* x, int64_t n, bool log, bool stream,
                   float* buffer) {
  float max_value = RowMaxF32(x, n);
  if (std::isinf(max_value) && max_value < 0) max_value = 0;  // all -inf
  const __m256 max = _mm256_set1_ps(max_value);
  float* exps = stream && n <= kSoftmaxBuffer ? buffer : y;
  __m256d sum = _mm256_setzero_pd();
  // The exponentials are the arithmetic-bound part: sixteen lanes where the
  // CPU has AVX-512, for the whole vectors of sixteen, the same bits.
  const int64_t done =
      HasAvx512() ? SoftmaxExps16(exps, x, n, max_value, log, &sum) : 0;
  for (int64_t i = done; i < n; i += 8) {
    const int64_t lanes = std::min<int64_t>(8, n - i);
    const __m256 e =
        Exp8(_mm256_sub_ps(LoadLanes(x + i, lanes, -__builtin_inff()), max));
    sum = AddWidened(sum, e);
    if (!log) StoreLanes(exps + i, lanes, e);
  }
  const double total = Sum4d(sum);
  if (log) {
    const LogSum log_sum(std::log(total));
    const __m256 high = _mm256_set1_ps(log_sum.high);
    const __m256 low = _mm256_set1_ps(log_sum.low);
    WriteFloats(y, n, stream, [&](int64_t i, int64_t lanes) {
      return LogSubtract(LoadLanes(x + i, lanes, -__builtin_inff()), max, high,
                         low);
    });
    return;
  }
  const __m256 scale = _mm256_set1_ps(static_cast<float>(1.0 / total));
  WriteFloats(y, n, stream && exps == buffer, [&](int64_t i, int64_t lanes) {
    return _mm256_mul_ps(LoadLanes(exps + i, lanes, -__builtin_inff()), scale);
  });
}

// Softmax along a non-last axis works on blocks of 16 columns (one cache
// line a row): with n = 4096 rows a block's input and output, 512 KiB, stay
// in L2 across the three passes.
constexpr int64_t kSoftmaxColumns = 16;  // two vectors of eight floats

// ExpSums8(): down rows r < rows of `lanes` (<= 8) columns x[r * stride
// + k], adds e^(x - shift) to sum[0, 8) in double, row by row, and writes
// the exponentials to y (x's layout) unless y is null.
void ExpSums8(const float* x, int64_t rows, int64_t stride, int64_t lanes,
              __m256 shift, double* sum, float* y) {
  __m256d low = _mm256_loadu_pd(sum);
  __m256d high = _mm256_loadu_pd(sum + 4);
  for (int64_t r = 0; r < rows; ++r) {
    const __m256 e =
        Exp8(_mm256_sub_ps(LoadLanes(x + r * stride, lanes, 0), shift));
    low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    if (y != nullptr) StoreLanes(y + r * stride, lanes, e);
  }
  _mm256_storeu_pd(sum, low);
  _mm256_storeu_pd(sum + 4, high);
}

// ExpSums16() is ExpSums8 on 16 full columns (REQUIRES: HasAvx512()), bit
// for bit: Exp16 gives Exp8's bits and each column adds the same doubles in
// the same order, at half the instructions for the exponentials, which
// bound the pass.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void ExpSums16(const float* x, int64_t rows, int64_t stride,
                               const float* shift, double* sum, float* y) {
  const __m512 subtrahend = _mm512_loadu_ps(shift);
  __m512d low = _mm512_loadu_pd(sum);
  __m512d high = _mm512_loadu_pd(sum + 8);
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 e =
        Exp16(_mm512_sub_ps(_mm512_loadu_ps(x + r * stride), subtrahend));
    low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    high = _mm512_add_pd(high,
                         _mm512_cvtps_pd(_mm256_castpd_ps(
                             _mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
    if (y != nullptr) _mm512_storeu_ps(y + r * stride, e);
  }
  _mm512_storeu_pd(sum, low);
  _mm512_storeu_pd(sum + 8, high);
}
KINDLING_AVX512_END

// ColumnExpSums() is ExpSums8 over `width` columns (shift, sum and y indexed
// by column; sum holds width rounded up to 8), sixteen columns at a time
// where the CPU has AVX-512.
void ColumnExpSums(const float* x, int64_t rows, int64_t stride, int64_t width,
                   const float* shift, double* sum, float* y) {
  const bool sixteen = HasAvx512();
  for (int64_t j = 0; j < width;) {
    float* out = y != nullptr ? y + j : nullptr;
    if (sixteen && j + 16 <= width) {
      ExpSums16(x + j, rows, stride, shift + j, sum + j, out);
      j += 16;
      continue;
    }
    const int64_t lanes = std::min<int64_t>(8, width - j);
    ExpSums8(x + j, rows, stride, lanes, LoadLanes(shift + j, lanes, 0),
             sum + j, out);
    j += 8;
  }
}

// SoftmaxColumnsF32(): softmax (or log_softmax) down each column of `b`
// into y (same layout), the columns in registers: max, then e^(x - max) and
// its sums in double, then scale (or subtract the log-sums).
template <bool kFull>
void SoftmaxColumnsF32(float* y, const ColumnBlock& b, bool log) {
  constexpr int kVectors = kSoftmaxColumns / 8;
  const ColumnMasks masks(b.width);
  __m256 max[kVectors];
  for (int k = 0; k < kVectors; ++k) max[k] = masks.Load<kFull>(b.x, k);
  for (int64_t r = 1; r < b.n; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      max[k] = _mm256_max_ps(masks.Load<kFull>(b.x + r * b.stride, k), max[k]);
    }
  }
  const __m256 negative_infinity = _mm256_set1_ps(-__builtin_inff());
  for (int k = 0; k < kVectors; ++k) {  // all -inf columns
    max[k] =
        _mm256_blendv_ps(max[k], _mm256_setzero_ps(),
                         _mm256_cmp_ps(max[k], negative_infinity, _CMP_EQ_OQ));
  }
  alignas(32) float shift[kSoftmaxColumns];
  for (int k = 0; k < kVectors; ++k) _mm256_store_ps(shift + 8 * k, max[k]);
  alignas(32) double sums[kSoftmaxColumns] = {};
  ColumnExpSums(b.x, b.n, b.stride, b.width, shift, sums, log ? nullptr : y);
  if (log) {
    alignas(32) float highs[kSoftmaxColumns];
    alignas(32) float lows[kSoftmaxColumns];
    for (int64_t i = 0; i < kSoftmaxColumns; ++i) {
      const LogSum log_sum(std::log(sums[i]));
      highs[i] = log_sum.high;
      lows[i] = log_sum.low;
    }
    for (int64_t r = 0; r < b.n; ++r) {
      for (int k = 0; k < kVectors; ++k) {
        const __m256 x = masks.Load<kFull>(b.x + r * b.stride, k);
        masks.Store<kFull>(y + r * b.stride, k,
                           LogSubtract(x, max[k], _mm256_load_ps(highs + 8 * k),
                                       _mm256_load_ps(lows + 8 * k)));
      }
    }
    return;
  }
  __m256 scale[kVectors];
  const __m256d one = _mm256_set1_pd(1.0);
  for (int k = 0; k < kVectors; ++k) {
    scale[k] = _mm256_set_m128(
        _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_load_pd(sums + 8 * k + 4))),
        _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_load_pd(sums + 8 * k))));
  }
  for (int64_t r = 0; r < b.n; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      float* row = y + r * b.stride;
      masks.Store<kFull>(row, k,
                         _mm256_mul_ps(masks.Load<kFull>(row, k), scale[k]));
    }
  }
}

// Softmax down long columns of wide rows streams instead: a block of 16
// columns of a [4096, 1024] matrix touches a new 4 KiB page on each of its
// 4096 rows, three times over, and the TLB misses made it slower than torch
// 2.15. A task takes a span of up to kSpanColumns columns and walks its rows
// in order, twice: chunks of kChunkRows rows first give the chunk's column
// maxima, rescale the running sums to the new maxima and add the chunk's
// exponentials (read again from L1), an online softmax; then each row is
// written once from x, the maxima and the sums. x is read twice from
// memory and y written once, against three passes with two writes.
constexpr int64_t kSpanColumns = 256;
constexpr int64_t kChunkRows = 16;  // 16 KiB of a span's rows: in L1

// StreamsColumns() is whether softmax along a non-last axis streams spans
// (above) rather than walking register blocks of 16 columns: where rows are
// a page or more apart and the columns long. Measured against the blocks
// (taskset -c 0,1, best of 6 alternating rounds, [n, inner]): [4096, 1024]
// 0.50x the time, [2048, 4096] 0.40x, [256, 1024] 0.59x, [64, 1024] 0.83x;
// but [16, 4096] 1.96x, and with narrower rows, which fit one span (one
// task, one thread), 2.5-4.7x ([1024, 256], [4096, 64], [8, 512, 64]).
bool StreamsColumns(const Extent& e) {
  return e.inner * int64_t{sizeof(float)} >= 4096 && e.n >= 64;
}

// SpanState: a span's running column maxima, the value each column's
// exponentials subtract (its max, or 0 while the column is all -inf) and the
// sums of those exponentials.
struct SpanState {
  alignas(32) float max[kSpanColumns];
  alignas(32) float shift[kSpanColumns];
  alignas(32) double sum[kSpanColumns];
};

// ScaledExps16() writes out[k] = e^(row[k] - shift[k]) * scale[k], k < 16
// (REQUIRES: HasAvx512()), the eight-lane output loop's bits.
KINDLING_AVX512_BEGIN
KINDLING_AVX512 void ScaledExps16(float* out, const float* row,
                                  const float* shift, const float* scale) {
  const __m512 e =
      Exp16(_mm512_sub_ps(_mm512_loadu_ps(row), _mm512_loadu_ps(shift)));
  _mm512_storeu_ps(out, _mm512_mul_ps(e, _mm512_loadu_ps(scale)));
}
KINDLING_AVX512_END

// AddChunk() folds rows [0, rows) of a span chunk (x[r * stride + j],
// j < width) into the state: the new maxima, the sums rescaled to them,
// then the chunk's exponentials added (sixteen columns at a time where the
// CPU has AVX-512).
void AddChunk(SpanState& state, const float* x, int64_t rows, int64_t stride,
              int64_t width) {
  const __m256 negative_infinity = _mm256_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < width; j += 8) {
    const int64_t lanes = std::min<int64_t>(8, width - j);
    const __m256 previous = _mm256_load_ps(state.max + j);
    __m256 max = previous;
    for (int64_t r = 0; r < rows; ++r) {
      max = _mm256_max_ps(LoadLanes(x + r * stride + j, lanes, 0), max);
    }
    const __m256 shift =
        _mm256_blendv_ps(max, _mm256_setzero_ps(),
                         _mm256_cmp_ps(max, negative_infinity, _CMP_EQ_OQ));
    // Rescale the sums to the new shift: e^(old - new) <= 1, or 0 where the
    // column was all -inf so far (its sum is 0, and e^(0 - new) may be inf).
    const __m256 rescale = _mm256_blendv_ps(
        Exp8(_mm256_sub_ps(_mm256_load_ps(state.shift + j), shift)),
        _mm256_setzero_ps(),
        _mm256_cmp_ps(previous, negative_infinity, _CMP_EQ_OQ));
    _mm256_store_pd(
        state.sum + j,
        _mm256_mul_pd(_mm256_load_pd(state.sum + j),
                      _mm256_cvtps_pd(_mm256_castps256_ps128(rescale))));
    _mm256_store_pd(
        state.sum + j + 4,
        _mm256_mul_pd(_mm256_load_pd(state.sum + j + 4),
                      _mm256_cvtps_pd(_mm256_extractf128_ps(rescale, 1))));
    _mm256_store_ps(state.max + j, max);
    _mm256_store_ps(state.shift + j, shift);
  }
  ColumnExpSums(x, rows, stride, width, state.shift, state.sum, nullptr);
}

// SoftmaxSpanF32(): softmax (or log_softmax) down the columns j < width of
// x[r * stride + j], r < n, into y (same layout). Lanes past `width` in the
// state hold harmless values (loads fill 0) and are never stored.
void SoftmaxSpanF32(float* y, const float* x, int64_t n, int64_t stride,
                    int64_t width, bool log) {
  SpanState state;
  std::fill(state.max, state.max + kSpanColumns, -__builtin_inff());
  std::fill(state.shift, state.shift + kSpanColumns, 0.0f);
  std::fill(state.sum, state.sum + kSpanColumns, 0.0);
  for (int64_t r = 0; r < n; r += kChunkRows) {
    AddChunk(state, x + r * stride, std::min(kChunkRows, n - r), stride, width);
  }
  alignas(32) float scale[kSpanColumns];  // 1 / sum, or log(sum)'s high part
  alignas(32) float low[kSpanColumns];    // log(sum)'s low part
  for (int64_t j = 0; j < width; ++j) {
    if (log) {
      const LogSum log_sum(std::log(state.sum[j]));
      scale[j] = log_sum.high;
      low[j] = log_sum.low;
    } else {
      scale[j] = static_cast<float>(1.0 / state.sum[j]);
    }
  }
  const bool sixteen = HasAvx512() && !log;
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * stride;
    float* out = y + r * stride;
    for (int64_t j = 0; j < width;) {
      if (sixteen && j + 16 <= width) {
        ScaledExps16(out + j, row + j, state.shift + j, scale + j);
        j += 16;
        continue;
      }
      const int64_t lanes = std::min<int64_t>(8, width - j);
      const __m256 v = LoadLanes(row + j, lanes, 0);
      const __m256 shift = _mm256_load_ps(state.shift + j);
      const __m256 result =
          log ? LogSubtract(v, shift, _mm256_load_ps(scale + j),
                            _mm256_load_ps(low + j))
              : _mm256_mul_ps(Exp8(_mm256_sub_ps(v, shift)),
                              _mm256_load_ps(scale + j));
      StoreLanes(out + j, lanes, result);
      j += 8;
    }
  }
}

void SoftmaxF32(float* y, const float* x, const Extent& e, bool log) {
  if (e.inner == 1) {
    const bool stream =
        e.outer * e.n * int64_t{sizeof(float)} >= kSoftmaxStreamingBytes;
    const int64_t grain = std::max<int64_t>(1, kSoftmaxGrain / e.n);
    ParallelFor(e.outer, grain, [&](int64_t begin, int64_t end) {
      alignas(32) float buffer[kSoftmaxBuffer];
      for (int64_t o = begin; o < end; ++o) {
        SoftmaxRowF32(y + o * e.n, x + o * e.n, e.n, log, stream, buffer);
      }
      if (stream) _mm_sfence();
    });
    return;
  }
  if (StreamsColumns(e)) {
    const int64_t spans = (e.inner + kSpanColumns - 1) / kSpanColumns;
    const int64_t grain =
        std::max<int64_t>(1, kSoftmaxGrain / (e.n * kSpanColumns));
    ParallelFor(e.outer * spans, grain, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t offset =
            task / spans * e.n * e.inner + task % spans * kSpanColumns;
        SoftmaxSpanF32(
            y + offset, x + offset, e.n, e.inner,
            std::min(kSpanColumns, e.inner - task % spans * kSpanColumns), log);
      }
    });
    return;
  }
  const int64_t grain =
      std::max<int64_t>(1, kSoftmaxGrain / (e.n * kSoftmaxColumns));
  ForEachColumnBlock(
      e, kSoftmaxColumns, grain, x, [&](const ColumnBlock& block, int64_t) {
        // y has x's layout.
        float* target = y + (block.x - x);
        WithFullness(block, kSoftmaxColumns, [&](auto full) {
          SoftmaxColumnsF32<decltype(full)::value>(target, block, log);
        });
      });
}

}  // namespace

// Hand-written rather than a library's: against torch 2.15's CPU softmax
// (its vectorized AVX-512 kernel) on the same [4096, 1024] f32 input, this
// runs 1.11x faster along rows and 2.20x down columns, log_softmax 1.17x /
// 2.09x (tensor_bench BM_Softmax, taskset -c 0,1, medians of 3, one run).
// oneDNN 2.6's softmax_v2 primitive on Zen 1 (AVX2; a throwaway probe,
// alternating calls in one process, three runs of medians): along the rows
// of [4096, 1024] 0.99-1.02x this code's time for softmax and 0.86-0.99x for
// log_softmax on two threads, 0.91-1.00x on one; down its columns it takes
// its reference implementation, 90-127x the time; on the MLP's [128, 10]
// logits log_softmax 0.65-0.68x on two threads and 0.84x on one (15.0
// against 17.9 us), about 3-6 us of a 4 ms training step. Its values differ
// in the last bits (up to 4.3e-6 for log_softmax), so adopting it for short
// rows would change every classifier's training results for a gain below
// what an epoch resolves; not adopted. Kindling's exponentials are its own
// (vector_math.h; SLEEF's measured in benches/vector_math_bench.cc).
void SoftmaxKernel(const TensorBase& out, const TensorBase& in, int axis,
                   bool log) {
  const TensorBase input = in.Contiguous();
  const Extent e = ExtentOf(input.shape(), axis);
  if (input.dtype() == DType::kF32) {
    SoftmaxF32(out.data_as<float>(), input.data_as<const float>(), e, log);
    return;
  }
  KINDLING_CHECK(input.dtype() == DType::kF64, "cpu softmax: dtype %s",
                 std::string(DTypeName(input.dtype())));
  const double* x = input.data_as<const double>();
  double* y = out.data_as<double>();
  const int64_t grain = std::max<int64_t>(1, kSoftmaxGrain / e.n);
  ParallelFor(e.outer * e.inner, grain, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / e.inner;
      const int64_t i = line % e.inner;
      const int64_t start = o * e.n * e.inner + i;
      SoftmaxLine<double>(y + start, x + start, e.n, e.inner, log);
    }
  });
}

}  // namespace kindling::cpu
