#include "kindling/tensor/layer_norm_ops.h"

#include <cstdint>
#include <limits>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/op_checks.h"

namespace kindling::ops {

using internal::CheckDefined;
using internal::CheckFloating;
using internal::ComputeDType;
using internal::ComputeDTypeOn;

namespace {

// CheckParameter() aborts unless `parameter` (when defined) is [features]
// of input's dtype and device.
void CheckParameter(const TensorBase& input, const TensorBase& parameter,
                    int64_t features, const char* what, const char* op) {
  if (!parameter.defined()) return;
  KINDLING_CHECK(parameter.shape() == Shape{features},
                 "%s: input %s needs %s of [%d], got %s", op,
                 input.shape().ToString(), what, features,
                 parameter.shape().ToString());
  KINDLING_CHECK(
      parameter.dtype() == input.dtype() &&
          parameter.device() == input.device(),
      "%s: %s is %s on %s, the input %s on %s", op, what,
      std::string(DTypeName(parameter.dtype())), parameter.device().ToString(),
      std::string(DTypeName(input.dtype())), input.device().ToString());
}

// Rows() is R, the number of [D] rows of `shape` (its leading axes).
int64_t Rows(const Shape& shape) {
  int64_t rows = 1;
  for (int axis = 0; axis + 1 < shape.rank(); ++axis) rows *= shape[axis];
  return rows;
}

// AsRows() is what the kernels read: detached, in `compute`, contiguous,
// viewed as [rows, features]; undefined stays undefined.
TensorBase AsRows(const TensorBase& tensor, DType compute, const Shape& rows) {
  if (!tensor.defined()) return tensor;
  return tensor.Detach().To(compute).Contiguous().Reshape(rows);
}

}  // namespace

LayerNormResult LayerNorm(const TensorBase& input, const TensorBase& gamma,
                          const TensorBase& beta, double epsilon) {
  const char* op = "layer_norm";
  CheckDefined(input, op);
  CheckFloating(input, op);
  KINDLING_CHECK(input.rank() >= 1, "%s: input %s has no axis", op,
                 input.shape().ToString());
  const int64_t features = input.shape()[input.rank() - 1];
  CheckParameter(input, gamma, features, "gamma", op);
  CheckParameter(input, beta, features, "beta", op);
  const int64_t rows = Rows(input.shape());
  const Device& device = input.device();
  // f16/bf16 stay 16-bit on a backend that computes them natively (CUDA);
  // the statistics are f32 for them either way.
  const DType compute = ComputeDTypeOn(input.dtype(), device);
  const DType statistics = ComputeDType(input.dtype());
  LayerNormResult result;
  TensorBase output = TensorBase::Empty(Shape{rows, features}, compute, device);
  result.mean = TensorBase::Empty(Shape{rows}, statistics, device);
  result.rstd = TensorBase::Empty(Shape{rows}, statistics, device);
  Backend& backend = GetBackend(device);
  if (output.numel() > 0) {
    const Shape parameter_shape{features};
    backend.LayerNorm(output, result.mean, result.rstd,
                      AsRows(input, compute, Shape{rows, features}),
                      AsRows(gamma, compute, parameter_shape),
                      AsRows(beta, compute, parameter_shape), epsilon);
  } else if (rows > 0) {
    // D = 0: the mean of no values, and no output to normalize.
    backend.Fill(result.mean, std::numeric_limits<double>::quiet_NaN());
    backend.Fill(result.rstd, std::numeric_limits<double>::quiet_NaN());
  }
  result.output = output.Reshape(input.shape()).To(input.dtype());
  return result;
}

LayerNormGradients LayerNormBackward(const TensorBase& grad,
                                     const TensorBase& input,
                                     const TensorBase& mean,
                                     const TensorBase& rstd,
                                     const TensorBase& gamma,
                                     const LayerNormNeeds& needs) {
  const char* op = "layer_norm backward";
  CheckDefined(grad, op);
  CheckDefined(input, op);
  CheckFloating(input, op);
  KINDLING_CHECK(
      input.rank() >= 1 && grad.shape() == input.shape() &&
          grad.dtype() == input.dtype() && grad.device() == input.device(),
      "%s: gradient %s%s does not match input %s%s", op,
      std::string(DTypeName(grad.dtype())), grad.shape().ToString(),
      std::string(DTypeName(input.dtype())), input.shape().ToString());
  const int64_t features = input.shape()[input.rank() - 1];
  const int64_t rows = Rows(input.shape());
  const DType compute = ComputeDTypeOn(input.dtype(), input.device());
  const DType statistics = ComputeDType(input.dtype());
  for (const TensorBase* statistic : {&mean, &rstd}) {
    CheckDefined(*statistic, op);
    KINDLING_CHECK(
        statistic->shape() == Shape{rows} && statistic->dtype() == statistics &&
            statistic->device() == input.device(),
        "%s: statistics %s%s do not fit input %s%s (need %s[%d])", op,
        std::string(DTypeName(statistic->dtype())),
        statistic->shape().ToString(), std::string(DTypeName(input.dtype())),
        input.shape().ToString(), std::string(DTypeName(statistics)), rows);
  }
  CheckParameter(input, gamma, features, "gamma", op);
  const Device& device = input.device();
  const Shape row_shape{rows, features};
  const Shape parameter_shape{features};
  LayerNormGradients grads;
  if (needs.input) grads.input = TensorBase::Empty(row_shape, compute, device);
  if (needs.gamma) {
    grads.gamma = TensorBase::Empty(parameter_shape, compute, device);
  }
  if (needs.beta) {
    grads.beta = TensorBase::Empty(parameter_shape, compute, device);
  }
  Backend& backend = GetBackend(device);
  if (rows == 0 || features == 0) {
    // No rows: the parameters' gradients are empty sums.
    for (TensorBase* g : {&grads.gamma, &grads.beta}) {
      if (g->defined() && g->numel() > 0) backend.Fill(*g, 0.0);
    }
  } else if (needs.input || needs.gamma || needs.beta) {
    backend.LayerNormBackward(
        grads.input, grads.gamma, grads.beta, AsRows(grad, compute, row_shape),
        AsRows(input, compute, row_shape), mean.Detach().Contiguous(),
        rstd.Detach().Contiguous(),
        needs.input ? AsRows(gamma, compute, parameter_shape) : TensorBase());
  }
  if (grads.input.defined()) {
    grads.input = grads.input.Reshape(input.shape()).To(input.dtype());
  }
  for (TensorBase* g : {&grads.gamma, &grads.beta}) {
    if (g->defined()) *g = g->To(input.dtype());
  }
  return grads;
}

}  // namespace kindling::ops
