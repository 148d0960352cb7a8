// Gradients: what backward returns — one gradient per leaf, keyed by ParamId.
//
// Autodiff never stores a gradient on a parameter or a tensor: the backward
// pass fills a Gradients object and hands it to the caller, who reads each
// parameter's gradient with Get() (optimizers, clipping, a data-parallel
// all-reduce). Nothing shared is mutated, so several threads (forked workers)
// can each run backward and own their Gradients.
//
//   kindling::Gradients grads = kindling::Backward(loss);
//   // By parameter: a Tensor<2> for a Param<Tensor<2>>.
//   if (std::optional<Tensor<2>> dw = grads.Get(model.fc1.weight)) {
//     ...  // same shape, dtype and device as the weight
//   }
//   grads.Get(w);               // a require-grad leaf tensor: its gradient
//   grads.Get(w.leaf_id());     // by id: an untyped TensorBase
//
// Get() returns a handle by value (sharing the gradient's storage, as any
// tensor copy does), or nullopt when the loss does not depend on the leaf
// (or it is frozen); a handle stays valid whatever later happens to the
// Gradients object.
//
// Tied parameters (one Param state in two fields) share a ParamId, so they
// get one entry: the sum of both uses' contributions.
//
// Op results marked with retain_grad() keep their gradients too, read the
// same way by the tensor:
//
//   Tensor<2> hidden = matmul(x, w).retain_grad();
//   ...
//   std::optional<Tensor<2>> g = grads.Get(hidden);
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
#include "kindling/tensor/autodiff_meta.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {
namespace autodiff_internal {
class Engine;  // backward.cc
}  // namespace autodiff_internal

namespace gradients_internal {

// ParamOfTensor: a Param<T> whose T adopts a TensorBase (Tensor<D, K>).
template <class P>
concept ParamOfTensor = requires(const P& param) {
  { param.id() } -> std::same_as<ParamId>;
  typename P::ValueType;
  requires std::constructible_from<typename P::ValueType, TensorBase>;
};

// TypedTensor: a Tensor<D, K> (anything with base() that adopts a
// TensorBase).
template <class T>
concept TypedTensor = requires(const T& tensor) {
  { tensor.base() } -> std::convertible_to<const TensorBase&>;
  requires std::constructible_from<T, TensorBase>;
};

}  // namespace gradients_internal

class Gradients {
 public:
  Gradients() = default;
  Gradients(Gradients&&) = default;
  Gradients& operator=(Gradients&&) = default;
  // Copying would double the graph's memory without a reason; move instead.
  Gradients(const Gradients&) = delete;
  Gradients& operator=(const Gradients&) = delete;

  // Get(id) is the gradient of the leaf `id`, or nullopt.
  std::optional<TensorBase> Get(ParamId id) const {
    auto it = grads_.find(id);
    if (it == grads_.end()) return std::nullopt;
    return it->second;
  }

  // Get(param) is the gradient of a Param<T> as a T (Tensor<D, K>), or
  // nullopt.
  template <gradients_internal::ParamOfTensor P>
  std::optional<typename P::ValueType> Get(const P& param) const {
    std::optional<TensorBase> grad = Get(param.id());
    if (!grad.has_value()) return std::nullopt;
    return typename P::ValueType(*std::move(grad));
  }

  // Get(tensor) is the gradient of a require-grad leaf tensor, or of an op
  // result marked with retain_grad() before it was used; nullopt for any
  // other tensor, or when the loss does not depend on it.
  std::optional<TensorBase> Get(const TensorBase& tensor) const {
    const auto& meta = tensor.autodiff_meta();
    if (meta == nullptr) return std::nullopt;
    if (tensor.is_leaf()) return Get(meta->id);
    if (!meta->retain_grad) return std::nullopt;
    auto it = retained_.find(meta->id);
    if (it == retained_.end()) return std::nullopt;
    return it->second;
  }
  // The same for a Tensor<D, K>, as a Tensor<D, K>.
  template <gradients_internal::TypedTensor T>
  std::optional<T> Get(const T& tensor) const {
    std::optional<TensorBase> grad = Get(tensor.base());
    if (!grad.has_value()) return std::nullopt;
    return T(*std::move(grad));
  }

  // Set() stores `grad` as the gradient of `id`, replacing any earlier one
  // (for gradient transforms: clipping, an all-reduce, a hand-built step).
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

 private:
  friend class autodiff_internal::Engine;

  // SetRetained() stores the gradient of a retained result under the id its
  // metadata carries (AutodiffMeta::id); only the backward engine does.
  void SetRetained(ParamId retain_id, TensorBase grad) {
    retained_[retain_id] = std::move(grad);
  }

  absl::flat_hash_map<ParamId, TensorBase> grads_;
  absl::flat_hash_map<ParamId, TensorBase> retained_;
};

}  // namespace kindling

#endif  // KINDLING_AUTODIFF_GRADIENTS_H_
