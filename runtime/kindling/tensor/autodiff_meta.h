// AutodiffMeta: what a tensor that requires grad carries for autodiff.
//
// The graph hangs off result tensors (as in libtorch): TensorBase holds a
// `std::shared_ptr<const AutodiffMeta>`, null when the tensor needs no
// gradient, so an op on tensors that need none pays one null test per input.
// A tensor that requires grad is either
//   * a leaf (node == null): a trainable value. Its gradient is reported
//     under `id`: a Param's value carries the Param's id, a tensor made to
//     require grad by hand (set_require_grad(true)) a fresh one; or
//   * an op result (node != null): `node` computes the gradients of the op's
//     inputs from the gradient of this result (grad_node.h).
//
// The metadata is immutable once shared: handles that differ in it (a leaf
// and its detached copy, a result and its retain_grad() handle) hold
// different AutodiffMeta objects over one storage. So reading a graph never
// races with building another, and forked workers can backward concurrently.
#ifndef KINDLING_TENSOR_AUTODIFF_META_H_
#define KINDLING_TENSOR_AUTODIFF_META_H_

#include <memory>

#include "kindling/core/param_id.h"

namespace kindling {

class GradNode;

struct AutodiffMeta {
  // The op that produced the tensor; null for a leaf.
  std::shared_ptr<GradNode> node;
  // A leaf's gradient key; for a result, the key of its retained gradient
  // (meaningful only when retain_grad).
  ParamId id = ParamId::FromValue(0);
  // A result whose gradient Backward() also reports (Gradients::Get).
  // Leaves are always reported.
  bool retain_grad = false;

  bool is_leaf() const { return node == nullptr; }
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_AUTODIFF_META_H_
