#include "kindling/autodiff/backward.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kindling/core/check.h"
#include "kindling/tensor/autodiff_meta.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/ops.h"

namespace kindling {
namespace autodiff_internal {
namespace {

// The gradient a tensor has gathered so far, and how many contributions are
// still to come (one per edge into it from a node that has not run).
struct Pending {
  int contributions_left = 0;
  TensorBase grad;
};

// Adds `contribution` (undefined: nothing) into `sum`.
void Accumulate(TensorBase& sum, TensorBase contribution) {
  if (!contribution.defined()) return;
  if (!sum.defined()) {
    sum = std::move(contribution);
    return;
  }
  sum = ops::Binary(BinaryOp::kAdd, sum, contribution);
}

}  // namespace

// Engine: one backward pass (a friend of Gradients, to store retained
// results' gradients). Internal: only Backward() below uses it.
class Engine {
 public:
  Engine(const BackwardOptions& options) : options_(options) {}

  Gradients Run(const AutodiffMeta& root, TensorBase seed) {
    if (root.is_leaf()) {
      // The loss is a leaf itself: its gradient is the seed.
      leaves_[root.id].grad = std::move(seed);
      FinishLeaf(root.id);
      return std::move(grads_);
    }
    CountEdges(root);
    GradNode* const root_node = root.node.get();
    nodes_[root_node].grad = std::move(seed);
    std::vector<GradNode*> ready = {root_node};
    while (!ready.empty()) {
      GradNode* node = ready.back();
      ready.pop_back();
      RunNode(*node, ready);
    }
    return std::move(grads_);
  }

 private:
  // Counts, for every node and leaf reachable from `root`, the edges into it,
  // and notes which results asked to retain their gradient. Iterative, so a
  // deep graph cannot overflow the stack.
  void CountEdges(const AutodiffMeta& root) {
    nodes_[root.node.get()];
    if (root.retain_grad) retain_ids_[root.node.get()].push_back(root.id);
    std::vector<GradNode*> stack = {root.node.get()};
    while (!stack.empty()) {
      GradNode* node = stack.back();
      stack.pop_back();
      for (const GradNode::Input& input : node->inputs()) {
        const AutodiffMeta* meta = input.meta.get();
        if (meta == nullptr) continue;
        if (meta->is_leaf()) {
          ++leaves_[meta->id].contributions_left;
          continue;
        }
        auto [it, inserted] = nodes_.try_emplace(meta->node.get());
        ++it->second.contributions_left;
        if (meta->retain_grad) NoteRetained(meta->node.get(), meta->id);
        if (inserted) stack.push_back(meta->node.get());
      }
    }
  }

  void NoteRetained(GradNode* node, ParamId id) {
    std::vector<ParamId>& ids = retain_ids_[node];
    for (ParamId known : ids) {
      if (known == id) return;
    }
    ids.push_back(id);
  }

  // Runs `node` on its summed gradient and hands each input its share;
  // nodes whose last contribution arrives go onto `ready`.
  void RunNode(GradNode& node, std::vector<GradNode*>& ready) {
    TensorBase grad = std::move(nodes_[&node].grad);
    GradList input_grads;
    if (grad.defined()) {
      if (auto it = retain_ids_.find(&node); it != retain_ids_.end()) {
        for (ParamId id : it->second) grads_.SetRetained(id, grad);
      }
      input_grads = node.Apply(grad, !options_.retain_graph);
    } else if (!options_.retain_graph) {
      node.Release();
    }
    const std::vector<GradNode::Input>& inputs = node.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const AutodiffMeta* meta = inputs[i].meta.get();
      if (meta == nullptr) continue;
      TensorBase contribution =
          i < input_grads.size() ? std::move(input_grads[i]) : TensorBase();
      if (meta->is_leaf()) {
        Pending& leaf = leaves_[meta->id];
        Accumulate(leaf.grad, std::move(contribution));
        if (--leaf.contributions_left == 0) FinishLeaf(meta->id);
        continue;
      }
      Pending& next = nodes_[meta->node.get()];
      Accumulate(next.grad, std::move(contribution));
      if (--next.contributions_left == 0) ready.push_back(meta->node.get());
    }
  }

  // Publishes a leaf's final gradient.
  void FinishLeaf(ParamId id) {
    TensorBase grad = std::move(leaves_[id].grad);
    if (!grad.defined()) return;
    // Contiguous: a gradient may be a broadcast view (the backward of sum is
    // an expand), and its consumers write into it in place.
    grad = grad.Contiguous();
    // Consumers write gradients in place (clipping, an all-reduce), so each
    // gets storage of its own when another tensor still views it: add hands
    // one tensor to both its inputs, and the seed is the caller's.
    if (grad.storage().use_count() > 1) grad = grad.Clone();
    if (options_.on_gradient_ready) options_.on_gradient_ready(id, grad);
    grads_.Set(id, std::move(grad));
  }

  const BackwardOptions& options_;
  // Only inserted into by CountEdges, so references stay valid while nodes
  // run.
  absl::flat_hash_map<GradNode*, Pending> nodes_;
  absl::flat_hash_map<ParamId, Pending> leaves_;
  absl::flat_hash_map<GradNode*, std::vector<ParamId>> retain_ids_;
  Gradients grads_;
};

namespace {

TensorBase SeedGradient(const TensorBase& loss,
                        const BackwardOptions& options) {
  if (options.grad_output.defined()) {
    const TensorBase& seed = options.grad_output;
    KINDLING_CHECK(seed.shape() == loss.shape() &&
                       seed.dtype() == loss.dtype() &&
                       seed.device() == loss.device(),
                   "backward: grad_output %s does not match the loss %s",
                   seed.ToString(), loss.ToString());
    return seed.Detach();
  }
  KINDLING_CHECK(loss.numel() == 1,
                 "backward: the loss %s has %d elements; pass grad_output "
                 "for a loss that is not a single value",
                 loss.ToString(), loss.numel());
  return ops::Full(loss.shape(), 1.0, loss.dtype(), loss.device());
}

}  // namespace
}  // namespace autodiff_internal

Gradients Backward(const TensorBase& loss, const BackwardOptions& options) {
  KINDLING_CHECK(loss.defined(), "backward: undefined loss");
  KINDLING_CHECK(loss.is_require_grad(),
                 "backward: the loss %s does not require grad (no input "
                 "required grad, or it was computed under NoGradGuard)",
                 loss.ToString());
  // Backward formulas are ops too; they must not record a graph of their own.
  NoGradGuard no_grad;
  autodiff_internal::Engine engine(options);
  return engine.Run(*loss.autodiff_meta(),
                    autodiff_internal::SeedGradient(loss, options));
}

}  // namespace kindling
