#include "kindling/nn/fused_attention.h"

#include <cmath>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/saved_tensor.h"

namespace kindling::nn {
namespace {

// InRowLayout() is x [B, H, L, D] itself where the kernels can read it in
// place: unit stride along D and rows that do not overlap (the [B, L, H, D]
// layout of the projections, viewed as heads, is such). Otherwise a
// contiguous copy, recorded as an op of its own when x requires grad.
TensorBase InRowLayout(const TensorBase& x) {
  const Shape& s = x.shape();
  const bool unit_d = s[3] <= 1 || x.strides()[3] == 1;
  const bool rows_apart = s[2] <= 1 || x.strides()[2] >= s[3];
  return unit_d && rows_apart ? x : x.Contiguous();
}

// SwapLAndH() turns [B, H, L, D] into [B, L, H, D] and back (a view).
TensorBase SwapLAndH(const TensorBase& x) {
  static constexpr int kOrder[] = {0, 2, 1, 3};
  return x.Permute(kOrder);
}

// EmptyHeads() is an uninitialized [B, H, L, D] laid out in memory as
// [B, L, H, D], the layout in which the heads are merged back into [B, L, E]
// with no copy.
TensorBase EmptyHeads(const Shape& shape, DType dtype, const Device& device) {
  return SwapLAndH(TensorBase::Empty(
      Shape{shape[0], shape[2], shape[1], shape[3]}, dtype, device));
}

// EmptyLike() is an uninitialized tensor of x's shape in x's layout where x
// is either contiguous or [B, L, H, D] viewed as heads, so a gradient comes
// back in the layout its input has.
TensorBase EmptyLike(const TensorBase& x) {
  if (!x.is_contiguous() && SwapLAndH(x).is_contiguous()) {
    return EmptyHeads(x.shape(), x.dtype(), x.device());
  }
  return TensorBase::Empty(x.shape(), x.dtype(), x.device());
}

}  // namespace

std::optional<Tensor<4>> FusedAttention(const Tensor<4>& q, const Tensor<4>& k,
                                        const Tensor<4>& v, bool causal,
                                        const TensorBase& padding) {
  const DeviceKind device = q.device().type();
  const FusedAttentionKernels::Kernel forward =
      FusedAttentionKernels::Forward(device);
  const FusedAttentionKernels::Kernel backward =
      FusedAttentionKernels::Backward(device);
  if (forward == nullptr || backward == nullptr) return std::nullopt;
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype()) return std::nullopt;
  // The kernels index by these sizes: a mismatch would read out of bounds.
  KINDLING_CHECK(q.dim(0) == k.dim(0) && q.dim(1) == k.dim(1) &&
                     q.dim(3) == k.dim(3) && k.dim(0) == v.dim(0) &&
                     k.dim(1) == v.dim(1) && k.dim(2) == v.dim(2) &&
                     k.device() == q.device() && v.device() == q.device(),
                 "FusedAttention: q %s, k %s and v %s do not fit ([B, H, T, "
                 "Dh], [B, H, S, Dh], [B, H, S, Dv], one device)",
                 q.shape().ToString(), k.shape().ToString(),
                 v.shape().ToString());
  KINDLING_CHECK(
      !padding.defined() ||
          (padding.dtype() == DType::kBool && padding.is_contiguous() &&
           padding.shape() == Shape{q.dim(0), k.dim(2)} &&
           padding.device() == q.device()),
      "FusedAttention: the key padding mask %s must be contiguous Bool "
      "[B=%d, S=%d] on %s",
      padding.ToString(), q.dim(0), k.dim(2), q.device().ToString());
  const FusedAttentionShape shape{
      .batch = q.dim(0),
      .heads = q.dim(1),
      .queries = q.dim(2),
      .keys = k.dim(2),
      .head_dim = q.dim(3),
      .value_dim = v.dim(3),
      .scale = 1.0 / std::sqrt(static_cast<double>(q.dim(3))),
      .causal = causal};
  // Inputs the kernels cannot read in place are copied by recorded ops of
  // their own, so the node's gradients flow back through them.
  const TensorBase q4 = InRowLayout(q.base());
  const TensorBase k4 = InRowLayout(k.base());
  const TensorBase v4 = InRowLayout(v.base());
  FusedAttentionTensors tensors{
      .q = q4.Detach(), .k = k4.Detach(), .v = v4.Detach(), .padding = padding};
  tensors.out = EmptyHeads(
      Shape{shape.batch, shape.heads, shape.queries, shape.value_dim},
      q.dtype(), q.device());
  tensors.logsumexp = TensorBase::Empty(
      Shape{shape.batch * shape.heads, shape.queries}, q.dtype(), q.device());
  if (!forward(shape, tensors)) return std::nullopt;
  TensorBase out = tensors.out;
  if (!autodiff::ShouldRecord(q4, k4, v4)) return Tensor<4>(out);
  return Tensor<4>(autodiff::Record(
      "fused_attention", {q4, k4, v4}, out,
      [shape, backward, q = SavedTensor(tensors.q), k = SavedTensor(tensors.k),
       v = SavedTensor(tensors.v), padding, out = tensors.out,
       logsumexp = tensors.logsumexp](const TensorBase& grad) -> GradList {
        FusedAttentionTensors t{.q = q,
                                .k = k,
                                .v = v,
                                .padding = padding,
                                .out = out,
                                .logsumexp = logsumexp,
                                .grad_out = InRowLayout(grad.Detach())};
        t.grad_q = EmptyLike(t.q);
        t.grad_k = EmptyLike(t.k);
        t.grad_v = EmptyLike(t.v);
        KINDLING_CHECK(backward(shape, t),
                       "fused_attention backward: the kernel declined dtype "
                       "%s its forward took",
                       std::string(DTypeName(t.q.dtype())));
        return {t.grad_q, t.grad_k, t.grad_v};
      }));
}

}  // namespace kindling::nn
