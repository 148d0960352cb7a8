// Gradient clipping over a whole Gradients (all parameters at once), with
// PyTorch's semantics (torch.nn.utils.clip_grad_norm_ / clip_grad_value_):
//
//   kindling::Gradients grads = kindling::Backward(loss);
//   absl::StatusOr<double> norm = kindling::ClipGradNorm(grads, 1.0);
//   // *norm is the norm before clipping, for logging
//   KINDLING_RETURN_IF_ERROR(optimizer.Step(model, grads));
//
// Both rewrite the gradients in place (through the backend's ScaleClamp
// kernel, no temporaries); a gradient whose storage is read-only or strided
// is first replaced by a writable contiguous copy. The norm is accumulated in
// f64 over the gradients in ParamId order, so it does not depend on the
// Gradients' iteration order and a resumed run reproduces it bit for bit.
#ifndef KINDLING_OPTIM_CLIP_H_
#define KINDLING_OPTIM_CLIP_H_

#include "absl/status/statusor.h"
#include "kindling/autodiff/gradients.h"

namespace kindling {

// ClipGradNorm() computes the `norm_type`-norm of all gradients taken as one
// vector (norm_type may be +infinity: the largest |x|) and, when it exceeds
// max_norm, scales every gradient by max_norm / (norm + 1e-6). Returns the
// norm before clipping. InvalidArgument when max_norm < 0, norm_type <= 0 or
// a gradient is not floating point; grads are then untouched.
[[nodiscard]] absl::StatusOr<double> ClipGradNorm(Gradients& grads,
                                                  double max_norm,
                                                  double norm_type = 2.0);

// ClipGradValue() clamps every gradient element to [-clip_value,
// clip_value]. InvalidArgument when clip_value < 0 or a gradient is not
// floating point; grads are then untouched.
[[nodiscard]] absl::Status ClipGradValue(Gradients& grads, double clip_value);

}  // namespace kindling

#endif  // KINDLING_OPTIM_CLIP_H_
