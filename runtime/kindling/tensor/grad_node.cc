#include "kindling/tensor/grad_node.h"

#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"

namespace kindling {

GradNode::GradNode(const char* name, std::vector<Input> inputs,
                   BackwardFn backward)
    : name_(name), inputs_(std::move(inputs)), backward_(std::move(backward)) {
  KINDLING_CHECK(backward_ != nullptr, "%s: node without a backward function",
                 name_);
}

namespace {

// Moves into `orphans` the producers of `inputs` that only these edges keep
// alive, cutting the edges, so they can be destroyed one at a time.
void CollectOrphans(std::vector<GradNode::Input>& inputs,
                    std::vector<std::shared_ptr<GradNode>>& orphans) {
  for (GradNode::Input& input : inputs) {
    if (input.meta == nullptr || input.meta.use_count() != 1) continue;
    // This edge is the metadata's only owner, and the metadata was created
    // non-const (make_shared<AutodiffMeta>), so taking its node is safe.
    auto& meta = const_cast<AutodiffMeta&>(*input.meta);
    if (meta.node != nullptr && meta.node.use_count() == 1) {
      orphans.push_back(std::move(meta.node));
    }
  }
}

}  // namespace

GradNode::~GradNode() {
  std::vector<std::shared_ptr<GradNode>> orphans;
  CollectOrphans(inputs_, orphans);
  while (!orphans.empty()) {
    std::shared_ptr<GradNode> node = std::move(orphans.back());
    orphans.pop_back();
    CollectOrphans(node->inputs_, orphans);
    // `node` is destroyed here with its producers already taken.
  }
}

GradList GradNode::Apply(const TensorBase& grad_output, bool release) {
  KINDLING_CHECK(backward_ != nullptr,
                 "backward: node '%s' was already run backward; pass "
                 "retain_graph to run a graph backward twice",
                 name_);
  GradList grads;
  autodiff_internal::ApplyingNodeScope applying(name_);
  if (release) {
    // Moved out first so the captured tensors die when `backward` does.
    BackwardFn backward = std::move(backward_);
    backward_ = nullptr;
    grads = backward(grad_output);
  } else {
    grads = backward_(grad_output);
  }
  KINDLING_CHECK(grads.size() == inputs_.size(),
                 "backward of '%s': %d gradients for %d inputs", name_,
                 grads.size(), inputs_.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    KINDLING_CHECK(grads[i].shape() == inputs_[i].shape &&
                       grads[i].dtype() == inputs_[i].dtype,
                   "backward of '%s': gradient %s for input %d of %s%s", name_,
                   grads[i].ToString(), i,
                   std::string(DTypeName(inputs_[i].dtype)),
                   inputs_[i].shape.ToString());
  }
  return grads;
}

namespace autodiff {

bool ShouldRecord(std::span<const TensorBase> inputs) {
  if (!IsGradEnabled()) return false;
  for (const TensorBase& input : inputs) {
    if (input.is_require_grad()) return true;
  }
  return false;
}

TensorBase Record(const char* name, std::span<const TensorBase> inputs,
                  TensorBase output, BackwardFn backward) {
  KINDLING_CHECK(!output.is_require_grad(),
                 "%s: the result to record already carries autodiff "
                 "metadata (compute it with autodiff::Untracked)",
                 name);
  if (!IsFloatingDType(output.dtype()) || !ShouldRecord(inputs)) return output;
  std::vector<GradNode::Input> edges;
  edges.reserve(inputs.size());
  for (const TensorBase& input : inputs) {
    edges.push_back({input.autodiff_meta(), input.shape(), input.dtype()});
  }
  auto meta = std::make_shared<AutodiffMeta>();
  meta->node =
      std::make_shared<GradNode>(name, std::move(edges), std::move(backward));
  return output.WithAutodiffMeta(std::move(meta));
}

void CheckInPlaceWrite(const char* op, const TensorBase& target,
                       const TensorBase& source) {
  if (!IsGradEnabled()) return;
  if (target.is_require_grad()) {
    KINDLING_CHECK(!target.is_leaf(),
                   "%s_: in-place write to %s, a leaf that requires grad, "
                   "while grad mode is on: the graphs that read it would see "
                   "the new values. Write under a NoGradGuard (as an "
                   "optimizer step does) or use the out-of-place op",
                   op, target.ToString());
    KINDLING_CHECK(false,
                   "%s_: in-place write to %s, the result of '%s' in an "
                   "autodiff graph: in-place ops are not recorded, so its "
                   "gradient would be wrong. Use the out-of-place op, or "
                   "write under a NoGradGuard",
                   op, target.ToString(), target.autodiff_meta()->node->name());
  }
  KINDLING_CHECK(!source.defined() || !source.is_require_grad(),
                 "%s_: in-place write from %s, which requires grad, into %s: "
                 "in-place ops are not recorded, so its gradient would be "
                 "lost. Use the out-of-place op",
                 op, source.ToString(), target.ToString());
}

TensorBase Zeros(const Shape& shape, DType dtype, const Device& device) {
  TensorBase zeros = TensorBase::Empty(shape, dtype, device);
  if (zeros.numel() > 0) GetBackend(device).Fill(zeros, 0.0);
  return zeros;
}

namespace {

// Half-precision sums are accumulated in f32, as the ops do.
DType SumDType(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 ? DType::kF32 : dtype;
}

// Sums `axis` of `in`, keeping it with size 1.
TensorBase SumAxis(const TensorBase& in, int axis) {
  Shape shape = in.shape();
  shape[axis] = 1;
  if (in.shape()[axis] == 0) return Zeros(shape, in.dtype(), in.device());
  TensorBase result = TensorBase::Empty(shape, in.dtype(), in.device());
  if (result.numel() > 0) {
    GetBackend(in.device()).Reduce(ReduceOp::kSum, result, in, axis);
  }
  return result;
}

}  // namespace

TensorBase SumToShape(const TensorBase& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  Shape broadcast;
  KINDLING_CHECK(BroadcastShapes(shape, grad.shape(), &broadcast) &&
                     broadcast == grad.shape(),
                 "sum_to_shape: gradient shape %s is not a broadcast of %s",
                 grad.shape().ToString(), shape.ToString());
  NoGradGuard no_grad;
  const int lead = grad.rank() - shape.rank();
  TensorBase sum = grad.To(SumDType(grad.dtype()));
  for (int axis = 0; axis < grad.rank(); ++axis) {
    const bool broadcast_axis =
        axis < lead || (shape[axis - lead] == 1 && grad.shape()[axis] != 1);
    if (broadcast_axis) sum = SumAxis(sum, axis);
  }
  return sum.Reshape(shape).To(grad.dtype());
}

}  // namespace autodiff
}  // namespace kindling
