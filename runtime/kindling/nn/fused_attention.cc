#include "kindling/nn/fused_attention.h"

#include <cmath>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/saved_tensor.h"

namespace kindling::nn {
namespace {

// AsHeads() is [B, H, L, D] as the contiguous [B*H, L, D] kernels read.
TensorBase AsHeads(const TensorBase& x) {
  const Shape& s = x.shape();
  return x.Contiguous().Reshape(Shape{s[0] * s[1], s[2], s[3]});
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
  // The contiguous [B*H, L, D] inputs are recorded ops of their own, so the
  // node's gradients flow back through them to any strided view.
  const TensorBase q3 = AsHeads(q.base());
  const TensorBase k3 = AsHeads(k.base());
  const TensorBase v3 = AsHeads(v.base());
  FusedAttentionTensors tensors{
      .q = q3.Detach(), .k = k3.Detach(), .v = v3.Detach(), .padding = padding};
  const Shape out_shape{shape.batch * shape.heads, shape.queries,
                        shape.value_dim};
  tensors.out = TensorBase::Empty(out_shape, q.dtype(), q.device());
  tensors.logsumexp = TensorBase::Empty(
      Shape{shape.batch * shape.heads, shape.queries}, q.dtype(), q.device());
  if (!forward(shape, tensors)) return std::nullopt;
  const Shape result_shape{shape.batch, shape.heads, shape.queries,
                           shape.value_dim};
  TensorBase out = tensors.out;
  if (!autodiff::ShouldRecord(q3, k3, v3)) {
    return Tensor<4>(out.Reshape(result_shape));
  }
  TensorBase recorded = autodiff::Record(
      "fused_attention", {q3, k3, v3}, out,
      [shape, backward, q = SavedTensor(tensors.q), k = SavedTensor(tensors.k),
       v = SavedTensor(tensors.v), padding, out = tensors.out,
       logsumexp = tensors.logsumexp](const TensorBase& grad) -> GradList {
        FusedAttentionTensors t{.q = q,
                                .k = k,
                                .v = v,
                                .padding = padding,
                                .out = out,
                                .logsumexp = logsumexp,
                                .grad_out = grad.Detach().Contiguous()};
        t.grad_q = TensorBase::Empty(t.q.shape(), t.q.dtype(), t.q.device());
        t.grad_k = TensorBase::Empty(t.k.shape(), t.k.dtype(), t.k.device());
        t.grad_v = TensorBase::Empty(t.v.shape(), t.v.dtype(), t.v.device());
        KINDLING_CHECK(backward(shape, t),
                       "fused_attention backward: the kernel declined dtype "
                       "%s its forward took",
                       std::string(DTypeName(t.q.dtype())));
        return {t.grad_q, t.grad_k, t.grad_v};
      });
  return Tensor<4>(recorded.Reshape(result_shape));
}

}  // namespace kindling::nn
