// What the CPU reductions and softmax (reduce.cc, softmax.cc) share: how
// they see a reduction along one axis, how they walk the columns of floats
// when that axis is not the last, and the float row max. Internal to the CPU
// backend.
//
// The input, made contiguous, is viewed as [outer, n, inner], reducing n
// (Extent). With inner > 1, a float reduction is cut into tasks of one slab
// `o` and up to kColumnBlock adjacent columns; a task walks the n rows of its
// columns with the columns in vector registers. Tasks are spread over the
// threads, so a single slab ([n, inner] along axis 0) runs in parallel too.
#ifndef KINDLING_BACKEND_CPU_REDUCE_LAYOUT_H_
#define KINDLING_BACKEND_CPU_REDUCE_LAYOUT_H_

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/tensor/shape.h"

namespace kindling::cpu {

// Extent: a reduction along one axis of a contiguous tensor as
// [outer, n, inner].
struct Extent {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

inline Extent ExtentOf(const Shape& shape, int axis) {
  Extent extent;
  for (int i = 0; i < axis; ++i) extent.outer *= shape[i];
  extent.n = shape[axis];
  for (int i = axis + 1; i < shape.rank(); ++i) extent.inner *= shape[i];
  return extent;
}

constexpr int64_t kColumnBlock = 32;  // four vectors of floats
constexpr int kColumnVectors = kColumnBlock / 8;

// ColumnMasks holds the load/store mask of each vector of a block `width`
// columns wide; Load()/Store() skip the masks for a full block.
struct ColumnMasks {
  explicit ColumnMasks(int64_t width) {
    for (int k = 0; k < kColumnVectors; ++k) {
      mask[k] = TailMask(std::clamp<int64_t>(width - 8 * k, 0, 8));
    }
  }
  template <bool kFull>
  __m256 Load(const float* x, int k) const {
    return kFull ? _mm256_loadu_ps(x + 8 * k)
                 : _mm256_maskload_ps(x + 8 * k, mask[k]);
  }
  template <bool kFull>
  void Store(float* y, int k, __m256 value) const {
    if (kFull) {
      _mm256_storeu_ps(y + 8 * k, value);
    } else {
      _mm256_maskstore_ps(y + 8 * k, mask[k], value);
    }
  }
  __m256i mask[kColumnVectors];
};

// ColumnBlock: a task's view, x[r * stride + i] for rows r < n and columns
// i < width, its output at out (one value per column).
struct ColumnBlock {
  const float* x;
  int64_t n;
  int64_t stride;
  int64_t width;
};

// SumColumnsOf() writes the sums of a block's columns over rows [0, n)
// (divided by n for a mean) to out, with row r's vector k of the block given
// by row_vector(r, k). Rows are added in float 64 at a time, then widened
// into double: the order of Reduce's column sums (reduce.cc), which a kernel
// that computes the rows as it sums them (relu_bias_backward.cc) shares to
// give their bits.
template <bool kFull, class RowVector>
void SumColumnsOf(float* out, const ColumnMasks& masks, int64_t n, bool mean,
                  const RowVector& row_vector) {
  __m256d total[2 * kColumnVectors];
  for (__m256d& lanes : total) lanes = _mm256_setzero_pd();
  for (int64_t first = 0; first < n; first += 64) {
    const int64_t last = std::min(n, first + 64);
    __m256 sum[kColumnVectors];
    for (__m256& lanes : sum) lanes = _mm256_setzero_ps();
    for (int64_t r = first; r < last; ++r) {
      for (int k = 0; k < kColumnVectors; ++k) {
        sum[k] = _mm256_add_ps(sum[k], row_vector(r, k));
      }
    }
    for (int k = 0; k < kColumnVectors; ++k) {
      total[2 * k] = _mm256_add_pd(
          total[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(sum[k])));
      total[2 * k + 1] = _mm256_add_pd(
          total[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(sum[k], 1)));
    }
  }
  const __m256d scale = _mm256_set1_pd(mean ? 1.0 / n : 1.0);
  for (int k = 0; k < kColumnVectors; ++k) {
    const __m128 low = _mm256_cvtpd_ps(_mm256_mul_pd(total[2 * k], scale));
    const __m128 high = _mm256_cvtpd_ps(_mm256_mul_pd(total[2 * k + 1], scale));
    masks.Store<kFull>(out, k, _mm256_set_m128(high, low));
  }
}

// ForEachColumnBlock() calls body(block, out_offset) for every task of up
// to block_width columns of `in`, in parallel, at least `grain` tasks to a
// thread; out_offset is the task's first column in the [outer, inner]
// output.
template <class Body>
inline void ForEachColumnBlock(const Extent& e, int64_t block_width,
                               int64_t grain, const float* in,
                               const Body& body) {
  const int64_t blocks = (e.inner + block_width - 1) / block_width;
  ParallelFor(e.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks;
      const int64_t column = task % blocks * block_width;
      const ColumnBlock block{in + o * e.n * e.inner + column, e.n, e.inner,
                              std::min(block_width, e.inner - column)};
      body(block, o * e.inner + column);
    }
  });
}

// WithFullness() calls f(std::true_type) for a full block, else
// f(std::false_type), so kernels get fullness as a template argument.
template <class F>
inline void WithFullness(const ColumnBlock& block, int64_t block_width,
                         const F& f) {
  if (block.width == block_width) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

// RowMaxF32() is the max of x[0..n), n >= 1; NaN if any element is NaN
// (reduce.cc, AVX2 with four accumulators).
float RowMaxF32(const float* x, int64_t n);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_REDUCE_LAYOUT_H_
