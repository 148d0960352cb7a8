// GradNode: one recorded op of the autodiff graph, and the helpers an op's
// front end uses to record one.
//
// When grad mode is on (grad_mode.h) and an input requires grad, an op
// computes its result untracked, then calls autodiff::Record(), which hangs a
// GradNode off the result's metadata (autodiff_meta.h). The node keeps an edge
// to each input's metadata and a backward function that maps the gradient of
// the result to the gradients of the inputs. Backward()
// (kindling/autodiff/backward.h) walks the nodes from the loss.
//
// Recording a custom op (any layer above runtime/kindling/tensor):
//
//   TensorBase Square(const TensorBase& x) {
//     if (!autodiff::ShouldRecord(x)) return SquareForward(x);
//     TensorBase y = autodiff::Untracked([&] { return SquareForward(x); });
//     return autodiff::Record("square", {x}, std::move(y),
//         [x = SavedTensor(x)](const TensorBase& grad) -> GradList {
//           return {ops::Binary(BinaryOp::kMul, grad,
//                               ops::BinaryScalar(BinaryOp::kMul, x, 2))};
//         });
//   }
//
// Rules for backward functions:
//   * Return one entry per input, in order; an undefined TensorBase means no
//     gradient (the input needs none, or it is zero). A defined entry has the
//     input's shape and dtype (checked).
//   * Capture the inputs and results they read as SavedTensor
//     (saved_tensor.h): detached, because a captured handle with metadata
//     would keep graph pieces alive, and capturing the result with its
//     metadata would be a cycle that never frees; and version-checked, so a
//     tensor written in place after the forward is caught, not read.
//   * They run with grad mode off, so ops inside record nothing. Write them
//     with ops:: and TensorBase views, never a backend's kernels, so they run
//     on every device.
//   * The engine drops the function right after calling it (unless asked to
//     retain the graph), which frees what it captured.
//
// Thread safety: recording only reads the inputs' metadata. A node is used by
// one Backward() at a time unless the graph is retained (then Apply() only
// reads it).
#ifndef KINDLING_TENSOR_GRAD_NODE_H_
#define KINDLING_TENSOR_GRAD_NODE_H_

#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kindling/tensor/autodiff_meta.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/saved_tensor.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// GradList is one gradient per input of a node, in input order.
using GradList = std::vector<TensorBase>;

// BackwardFn maps the gradient of an op's result to its inputs' gradients.
using BackwardFn = std::function<GradList(const TensorBase& grad_output)>;

class GradNode {
 public:
  // Input is one edge: the input's metadata (null when it needs no gradient)
  // and the shape and dtype its gradient must have.
  struct Input {
    std::shared_ptr<const AutodiffMeta> meta;
    Shape shape;
    DType dtype;
  };

  GradNode(const char* name, std::vector<Input> inputs, BackwardFn backward);
  // Frees the chain of nodes only this one holds iteratively, so dropping a
  // very deep graph (an unrolled loop of 100k ops) cannot overflow the stack.
  ~GradNode();
  GradNode(const GradNode&) = delete;
  GradNode& operator=(const GradNode&) = delete;

  // name() is the op's name, for messages ("mul", "matmul", ...).
  const char* name() const { return name_; }
  const std::vector<Input>& inputs() const { return inputs_; }

  // Apply() runs the backward function on `grad_output` and checks the
  // gradients it returns. With `release` the function, and the tensors it
  // saved, are dropped afterwards; applying a released node aborts (the graph
  // was already run backward without retain_graph).
  GradList Apply(const TensorBase& grad_output, bool release);

  // Release() drops the backward function and what it saved without running
  // it: for a node no gradient reached.
  void Release() { backward_ = nullptr; }

  // released() is true once Apply(..., release=true) or Release() ran.
  bool released() const { return backward_ == nullptr; }

 private:
  const char* name_;
  std::vector<Input> inputs_;
  BackwardFn backward_;
};

namespace autodiff {

// ShouldRecord() is true when grad mode is on and an input requires grad:
// then an op records a node, otherwise its result carries no metadata.
inline bool ShouldRecord(const TensorBase& input) {
  return input.is_require_grad() && IsGradEnabled();
}
inline bool ShouldRecord(const TensorBase& a, const TensorBase& b) {
  return (a.is_require_grad() || b.is_require_grad()) && IsGradEnabled();
}
inline bool ShouldRecord(const TensorBase& a, const TensorBase& b,
                         const TensorBase& c) {
  return (a.is_require_grad() || b.is_require_grad() || c.is_require_grad()) &&
         IsGradEnabled();
}
bool ShouldRecord(std::span<const TensorBase> inputs);

// Untracked() returns forward() computed with grad mode off, so the views
// and ops an op uses internally record nothing.
template <class Forward>
TensorBase Untracked(Forward&& forward) {
  NoGradGuard no_grad;
  return std::forward<Forward>(forward)();
}

// Record() returns `output` as the result of op `name` on `inputs`, carrying a
// node with `backward`. `output` must carry no metadata (compute it
// Untracked). Integer and bool results are returned unrecorded: they have no
// gradient. Inputs that need no gradient get a null edge.
TensorBase Record(const char* name, std::span<const TensorBase> inputs,
                  TensorBase output, BackwardFn backward);
inline TensorBase Record(const char* name,
                         std::initializer_list<TensorBase> inputs,
                         TensorBase output, BackwardFn backward) {
  return Record(name,
                std::span<const TensorBase>(inputs.begin(), inputs.size()),
                std::move(output), std::move(backward));
}

// CheckInPlaceWrite() aborts, naming `op` and the shapes, when writing
// `target` in place from `source` (undefined: no source) would go wrong
// with autodiff. In-place writes are not recorded, so while grad mode is on
//   * `target` may not require grad: a leaf's value would change under the
//     graphs that read it (PyTorch refuses this too), and an op result's
//     gradient would skip the write;
//   * `source` may not require grad: its gradient would be lost.
// Under a NoGradGuard every write is allowed: that is how an optimizer, or
// an initializer, updates parameters. The op:: in-place writers call it.
void CheckInPlaceWrite(const char* op, const TensorBase& target,
                       const TensorBase& source);

// SumToShape() reduces `grad`, whose shape is `shape` broadcast (NumPy
// rules), back to `shape` by summing the broadcast dimensions: the gradient of
// an input that an op broadcast. Returns `grad` itself when the shapes match.
TensorBase SumToShape(const TensorBase& grad, const Shape& shape);

// Zeros() is a zero tensor of `shape`, `dtype` on `device`.
TensorBase Zeros(const Shape& shape, DType dtype, const Device& device);

}  // namespace autodiff
}  // namespace kindling

#endif  // KINDLING_TENSOR_GRAD_NODE_H_
