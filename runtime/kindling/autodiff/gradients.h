// Gradients: what backward returns — one gradient per leaf, keyed by ParamId.
//
// Autodiff never stores a gradient on a parameter or a tensor: the backward
// pass fills a Gradients object and hands it to the caller, who reads each
// parameter's gradient by its ParamId (optimizers, clipping, a data-parallel
// all-reduce). Nothing shared is mutated, so several threads (forked workers)
// can each run backward and own their Gradients.
//
//   kindling::Gradients grads = kindling::Backward(loss);
//   if (const kindling::TensorBase* g = grads.Find(model.fc1.weight.id())) {
//     ...  // same shape, dtype and device as the weight
//   }
//
// Tied parameters (one Param state in two fields) share a ParamId, so they
// get one entry: the sum of both uses' contributions.
//
// Op results marked with retain_grad() have their gradients in a second table,
// read by the tensor:
//
//   Tensor<2> hidden = matmul(x, w).retain_grad();
//   ...
//   const kindling::TensorBase* g = grads.FindRetained(hidden);
//
// Thread safety: const members may be called concurrently; Set and Take need
// exclusive access, like any standard container.
#ifndef KINDLING_AUTODIFF_GRADIENTS_H_
#define KINDLING_AUTODIFF_GRADIENTS_H_

#include <concepts>
#include <cstddef>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/autograd_meta.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

class Gradients {
 public:
  Gradients() = default;
  Gradients(Gradients&&) = default;
  Gradients& operator=(Gradients&&) = default;
  // Copying would double the graph's memory without a reason; move instead.
  Gradients(const Gradients&) = delete;
  Gradients& operator=(const Gradients&) = delete;

  // Find() is the gradient of the leaf `id`, or null when the loss does not
  // depend on it (or it is frozen).
  const TensorBase* Find(ParamId id) const {
    auto it = grads_.find(id);
    return it == grads_.end() ? nullptr : &it->second;
  }

  // Set() stores `grad` as the gradient of `id`, replacing any earlier one.
  void Set(ParamId id, TensorBase grad) { grads_[id] = std::move(grad); }

  // Take() removes and returns the gradient of `id` (nullopt if absent), so
  // a consumer can reuse its storage without a copy.
  std::optional<TensorBase> Take(ParamId id) {
    auto it = grads_.find(id);
    if (it == grads_.end()) return std::nullopt;
    TensorBase grad = std::move(it->second);
    grads_.erase(it);
    return grad;
  }

  size_t size() const { return grads_.size(); }
  bool empty() const { return grads_.empty(); }

  // ForEach() calls fn(ParamId, const TensorBase&) once per entry, in no
  // particular order.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [id, grad] : grads_) fn(id, grad);
  }

  // FindRetained() is the gradient of `tensor`, an op result marked with
  // retain_grad() before it was used, or null when it was not marked or the
  // loss does not depend on it. A leaf's gradient is read with Find().
  const TensorBase* FindRetained(const TensorBase& tensor) const {
    const auto& meta = tensor.autograd_meta();
    if (meta == nullptr || !meta->retain_grad) return nullptr;
    auto it = retained_.find(meta->id);
    return it == retained_.end() ? nullptr : &it->second;
  }
  // The same for a Tensor<D, K> (anything with base()).
  template <class T>
  requires requires(const T& t) {
    { t.base() } -> std::convertible_to<const TensorBase&>;
  }
  const TensorBase* FindRetained(const T& tensor) const {
    return FindRetained(tensor.base());
  }

  // SetRetained() stores the gradient of a retained result under the id its
  // metadata carries (AutogradMeta::id); used by Backward().
  void SetRetained(ParamId retain_id, TensorBase grad) {
    retained_[retain_id] = std::move(grad);
  }

 private:
  absl::flat_hash_map<ParamId, TensorBase> grads_;
  absl::flat_hash_map<ParamId, TensorBase> retained_;
};

}  // namespace kindling

#endif  // KINDLING_AUTODIFF_GRADIENTS_H_
