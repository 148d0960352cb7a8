// Backward(): reverse-mode differentiation of a loss over the graph its ops
// recorded (kindling/tensor/grad_node.h).
//
// Ops record a node on their result whenever grad mode is on and an input
// requires grad; Backward() walks those nodes from the loss back to the
// leaves and returns every leaf's gradient keyed by ParamId. It mutates
// nothing shared: no gradient is stored on a tensor or a Param, so forked
// workers, each with its own graph, can run Backward() concurrently.
//
//   Tensor<2> w = Tensor<2>::RandomNormal({3, 2}, generator)
//                     .set_require_grad(true);  // a leaf with a fresh id
//   Tensor<0> loss = matmul(x, w).relu().mean();
//   kindling::Gradients grads = kindling::Backward(loss);
//   std::optional<Tensor<2>> dw = grads.Get(w);  // [3, 2]
//
// Memory: each node drops the tensors it saved for backward as soon as it has
// run (unless retain_graph), so when Backward() returns the graph holds no
// tensor bytes; the node objects themselves go when the loss is dropped.
// Dropping a loss without running backward frees the whole graph.
//
// Data-parallel hook: on_gradient_ready is called once per leaf as soon as its
// gradient is final (every contribution summed), while backward still runs
// through the rest of the graph, so an all-reduce of early layers can overlap
// the backward of the others. It runs on the calling thread.
#ifndef KINDLING_AUTODIFF_BACKWARD_H_
#define KINDLING_AUTODIFF_BACKWARD_H_

#include <functional>

#include "kindling/autodiff/gradients.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

struct BackwardOptions {
  // The gradient of the loss, of its shape and dtype. Undefined means ones,
  // and then the loss must have exactly one element.
  TensorBase grad_output;
  // on_gradient_ready(id, grad) is called once per leaf that gets a
  // gradient, as soon as that gradient is final and before Backward()
  // returns. `grad` is the tensor Backward() returns under `id`.
  std::function<void(ParamId, const TensorBase&)> on_gradient_ready;
  // retain_graph keeps what the nodes saved, so the same graph can be run
  // backward again (also concurrently, since nodes are then only read).
  bool retain_graph = false;
};

// Backward() returns the gradient of `loss` with respect to every leaf it
// depends on (plus retained results, Gradients::Get). Leaves that
// need no gradient get none; a leaf used twice, or two leaves sharing a
// ParamId (tied params), get the sum. Leaf gradients are contiguous and
// share storage with no other tensor, so they may be written in place.
// REQUIRES: `loss` requires grad (was computed from a leaf that requires
// grad, with grad mode on); its graph was not run backward before without
// retain_graph. Both checked.
Gradients Backward(const TensorBase& loss, const BackwardOptions& options = {});

template <int D>
Gradients Backward(const Tensor<D>& loss, const BackwardOptions& options = {}) {
  return Backward(loss.base(), options);
}

}  // namespace kindling

#endif  // KINDLING_AUTODIFF_BACKWARD_H_
