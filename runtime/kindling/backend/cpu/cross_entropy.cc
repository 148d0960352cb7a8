// Cross-entropy's gradient on the CPU (Backend::CrossEntropyBackward): one
// pass over the log-probabilities, where the composed ops (a one-hot target,
// exp, a subtraction and a scaling) take four, with three temporaries of the
// logits' size.
//
// The values are the composed ops', bit for bit: Exp8 gives each lane the
// bits UnaryOp::kExp gives it (the lanes do not depend on each other), and
// the target and the scale are rounded to float as BinaryScalar rounds its
// scalar before the float operation.
//
// Library first: oneDNN 2.6's log-softmax backward (softmax_v2_backward,
// softmax_log) computes the same gradient from an incoming gradient of
// -q * grad / R, which must first be written out. On [4096, 1024] f32, two
// threads, Zen 1 (a throwaway probe, three runs of medians of 15): that
// primitive alone 33.9-35.8 ms, with the target's pass 35.5-42.0 ms, against
// this kernel's 3.09-3.74 ms (11.2-11.6x), and its values are not the
// composed ops' (401580 of 4194304 elements differ, by up to 9.1e-13). The
// exponential is Kindling's own Exp8 (SLEEF's was measured against it in
// benches/vector_math_bench.cc; docs/performance.md "Vector math").
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/core/check.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cpu {
namespace {

// Target: the target distribution's two values, as the composed ops round
// them: 1 and 0 (the one-hot rows), or with smoothing eps,
// float(1 - eps) * x + float(eps / classes) for x = 1 and x = 0.
struct Target {
  Target(double label_smoothing, int64_t classes) {
    if (label_smoothing == 0) return;
    const float keep = Convert<float>(1 - label_smoothing);
    const float spread =
        Convert<float>(label_smoothing / static_cast<double>(classes));
    on_label = 1.0f * keep + spread;
    off_label = 0.0f * keep + spread;
  }
  float on_label = 1;
  float off_label = 0;
};

// GradientRow(): out[c] = (exp(log_p[c]) - target) * scale for one row of
// `classes`, the target on_label at `label` and off_label elsewhere.
void GradientRow(float* out, const float* log_p, int64_t classes, int64_t label,
                 const Target& target, float scale) {
  const __m256 scale8 = _mm256_set1_ps(scale);
  const __m256 off8 = _mm256_set1_ps(target.off_label);
  const __m256 on8 = _mm256_set1_ps(target.on_label);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t i = 0; i < classes; i += 8) {
    const int64_t lanes = std::min<int64_t>(8, classes - i);
    const __m256 x = lanes == 8 ? _mm256_loadu_ps(log_p + i)
                                : LoadPartial(log_p + i, lanes, 0.0f);
    // on_label in the lane of the label, if it falls in this block.
    const __m256 at_label = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        lane, _mm256_set1_epi32(static_cast<int32_t>(label - i))));
    const __m256 target8 = _mm256_blendv_ps(off8, on8, at_label);
    const __m256 value = _mm256_mul_ps(_mm256_sub_ps(Exp8(x), target8), scale8);
    if (lanes == 8) {
      _mm256_storeu_ps(out + i, value);
    } else {
      StorePartial(out + i, lanes, value);
    }
  }
}

}  // namespace

bool CrossEntropyBackwardKernel(const TensorBase& out,
                                const TensorBase& log_probabilities,
                                const TensorBase& labels,
                                double label_smoothing,
                                const TensorBase& grad) {
  if (log_probabilities.dtype() != DType::kF32 ||
      log_probabilities.rank() != 2 || !log_probabilities.is_contiguous() ||
      out.dtype() != DType::kF32 || !out.is_contiguous() ||
      out.shape() != log_probabilities.shape() ||
      labels.dtype() != DType::kI64 || labels.rank() != 1 ||
      grad.dtype() != DType::kF32 || grad.numel() != 1) {
    return false;
  }
  const int64_t rows = log_probabilities.shape()[0];
  const int64_t classes = log_probabilities.shape()[1];
  KINDLING_CHECK(labels.shape()[0] == rows,
                 "cross_entropy backward: %d labels for log-probabilities %s",
                 labels.shape()[0], log_probabilities.shape().ToString());
  const float* log_p = log_probabilities.data_as<const float>();
  const int64_t* label = labels.data_as<const int64_t>();
  const int64_t label_stride = labels.strides()[0];
  float* result = out.data_as<float>();
  // BinaryScalar(kDiv, grad, rows): the row count rounded to float first.
  const float scale = element_math::SafeDiv(
      *grad.data_as<const float>(), Convert<float>(static_cast<double>(rows)));
  const Target target(label_smoothing, classes);
  // The exponential sets this pass's cost, as it does UnaryOp::kExp's.
  ParallelFor(rows, std::max<int64_t>(1, kTranscendentalGrain / classes),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const int64_t row_label = label[r * label_stride];
                  KINDLING_CHECK(row_label >= 0 && row_label < classes,
                                 "cross_entropy backward: label %d of row %d "
                                 "outside [0, %d)",
                                 row_label, r, classes);
                  GradientRow(result + r * classes, log_p + r * classes,
                              classes, row_label, target, scale);
                }
              });
  return true;
}

}  // namespace kindling::cpu
