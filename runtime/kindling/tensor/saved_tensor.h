// SavedTensor: a tensor an op's backward function keeps from its forward,
// with the guard that it was not overwritten in the meantime.
//
// A backward function reads tensors of the forward (matmul's operands, exp's
// result). If one of them is written in place between the forward and
// Backward() (`x.mul_(2)` under a NoGradGuard, an optimizer step taken
// before backward), the gradient would silently use the new values. So a
// backward function captures what it reads as SavedTensor, which notes the
// storage's version (storage.h: every in-place write bumps it) when it is
// saved and checks it when backward reads the tensor back: one integer
// compare per read. A mismatch aborts, naming the op whose backward was
// running, the tensor and both versions (PyTorch's "modified by an inplace
// operation" error). Backward() returns no Status, and running a graph whose
// inputs were changed is a programming error, like running it twice.
//
//   return autodiff::Record("mul", {a, b}, std::move(out),
//       [a = SavedTensor(a), b = SavedTensor(b)](const TensorBase& grad) {
//         return GradList{ops::Binary(BinaryOp::kMul, grad, b),
//                         ops::Binary(BinaryOp::kMul, grad, a)};
//       });
//
// A SavedTensor reads as the `const TensorBase&` it saved (the conversion
// checks), so backward code written for plain tensors takes it unchanged.
// The saved handle is detached: it keeps no graph alive (grad_node.h).
//
// Tensors an op creates for its own backward and never hands out (a softmax
// of the logits, argmax indices) cannot be written by anyone else and may be
// captured as plain detached tensors.
//
// Thread safety: like TensorBase; checking only reads the storage's atomic
// version.
#ifndef KINDLING_TENSOR_SAVED_TENSOR_H_
#define KINDLING_TENSOR_SAVED_TENSOR_H_

#include <cstdint>

#include "kindling/tensor/tensor_base.h"

namespace kindling {

class SavedTensor {
 public:
  // SavedTensor() saves nothing: reads as an undefined tensor.
  SavedTensor() = default;
  // SavedTensor() saves `tensor` detached, at its storage's current version.
  // An undefined `tensor` saves nothing.
  explicit SavedTensor(const TensorBase& tensor);

  // get() is the saved tensor. Aborts when its storage was written in place
  // since it was saved.
  const TensorBase& get() const {
    if (tensor_.defined() && tensor_.storage()->version() != saved_version_) {
      FailModified();
    }
    return tensor_;
  }
  // A SavedTensor reads as the tensor it saved, checked as by get().
  operator const TensorBase&() const { return get(); }  // NOLINT

  bool defined() const { return tensor_.defined(); }
  // saved_version() is the storage version the tensor was saved at.
  uint64_t saved_version() const { return saved_version_; }

 private:
  [[noreturn]] void FailModified() const;

  TensorBase tensor_;
  uint64_t saved_version_ = 0;
};

namespace autodiff_internal {

// ApplyingNodeScope names the node whose backward function runs on this
// thread, for SavedTensor's message; GradNode::Apply() opens one.
class ApplyingNodeScope {
 public:
  explicit ApplyingNodeScope(const char* name);
  ~ApplyingNodeScope();
  ApplyingNodeScope(const ApplyingNodeScope&) = delete;
  ApplyingNodeScope& operator=(const ApplyingNodeScope&) = delete;

 private:
  const char* previous_;
};

}  // namespace autodiff_internal
}  // namespace kindling

#endif  // KINDLING_TENSOR_SAVED_TENSOR_H_
