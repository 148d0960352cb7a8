#include "kindling/optim/clip.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {
namespace {

// kNormEps: PyTorch's clip_grad_norm_ divides by norm + 1e-6.
constexpr double kNormEps = 1e-6;

// SortedIds() lists the gradients' ids in ascending order, checking that
// every gradient is floating point.
absl::StatusOr<std::vector<ParamId>> SortedIds(const Gradients& grads,
                                               const char* op) {
  std::vector<ParamId> ids;
  ids.reserve(grads.size());
  absl::Status status;
  grads.ForEach([&](ParamId id, const TensorBase& grad) {
    if (!grad.defined() || !IsFloatingDType(grad.dtype())) {
      status = absl::InvalidArgumentError(
          absl::StrCat(op, ": the gradient of param ", id.ToString(), " is ",
                       grad.ToString(), ", not floating point"));
    }
    ids.push_back(id);
  });
  if (!status.ok()) return status;
  std::sort(ids.begin(), ids.end());
  return ids;
}

// ApplyScaleClamp() runs the ScaleClamp kernel on each listed gradient,
// making it writable and contiguous first.
void ApplyScaleClamp(Gradients& grads, const std::vector<ParamId>& ids,
                     double scale, double max_abs) {
  for (ParamId id : ids) {
    TensorBase grad = *grads.Take(id);
    if (!grad.is_contiguous()) grad = grad.Contiguous();
    grad.MakeWritable();
    GetBackend(grad.device()).ScaleClamp(grad, scale, max_abs);
    grads.Set(id, std::move(grad));
  }
}

}  // namespace

absl::StatusOr<double> ClipGradNorm(Gradients& grads, double max_norm,
                                    double norm_type) {
  if (!(max_norm >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClipGradNorm: max_norm ", max_norm, " must be >= 0"));
  }
  if (!(norm_type > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClipGradNorm: norm_type ", norm_type, " must be > 0"));
  }
  absl::StatusOr<std::vector<ParamId>> ids = SortedIds(grads, "ClipGradNorm");
  if (!ids.ok()) return ids.status();
  const bool max_norm_kind = std::isinf(norm_type);
  double total = 0;
  for (ParamId id : *ids) {
    TensorBase grad = *grads.Get(id);
    if (!grad.is_contiguous()) grad = grad.Contiguous();
    const double part = GetBackend(grad.device()).AbsPowerSum(grad, norm_type);
    total = max_norm_kind ? (part > total || part != part ? part : total)
                          : total + part;
  }
  const double norm = max_norm_kind ? total : std::pow(total, 1.0 / norm_type);
  const double coefficient = max_norm / (norm + kNormEps);
  // PyTorch multiplies by min(coefficient, 1); multiplying by 1 changes
  // nothing, so only a real clip touches memory. A NaN norm gives a NaN
  // coefficient, which PyTorch also applies.
  if (!(coefficient >= 1)) {
    ApplyScaleClamp(grads, *ids, coefficient,
                    std::numeric_limits<double>::infinity());
  }
  return norm;
}

absl::Status ClipGradValue(Gradients& grads, double clip_value) {
  if (!(clip_value >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClipGradValue: clip_value ", clip_value, " must be >= 0"));
  }
  absl::StatusOr<std::vector<ParamId>> ids = SortedIds(grads, "ClipGradValue");
  if (!ids.ok()) return ids.status();
  ApplyScaleClamp(grads, *ids, 1.0, clip_value);
  return absl::OkStatus();
}

}  // namespace kindling
