// Buffer<T>: module state that is saved and moved with the module but not
// trained, such as BatchNorm's running mean and variance (PyTorch calls these
// buffers; Burn, RunningState).
//
// Training updates a buffer from inside a forward pass that reads the module
// through a const reference, so the value lives behind a shared, locked cell:
// copies of a module share their buffers (as copies of a Param share their
// state) and update() is visible to all of them.
//
// A buffer starts from a Param, usually a lazy one, so building a model
// allocates nothing for its buffers either: the first value() or update()
// reads the initial value.
//
//   kindling::Buffer<Tensor<1>> running_mean(
//       kindling::Initializer::Zeros().Init<1>({64}, device));
//   running_mean.update(new_mean);      // from forward(), const module
//   Tensor<1> mean = running_mean.value();
//
// A buffer is never trained: values are stored and returned detached from
// autodiff (for types with detach(), like tensors), so a running statistic
// computed from activations keeps no graph alive and gets no gradient.
//
// Thread safety: every member function may be called from any thread.
#ifndef KINDLING_MODULE_BUFFER_H_
#define KINDLING_MODULE_BUFFER_H_

#include <concepts>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/core/parameter.h"

namespace kindling {

template <Parameter T>
class Buffer {
 public:
  using DeviceType = typename T::DeviceType;
  using ShapeType = typename T::ShapeType;

  // A buffer whose first value is `initial`'s (read lazily), under its id.
  explicit Buffer(Param<T> initial)
      : id_(initial.id()), cell_(std::make_shared<Cell>(std::move(initial))) {}

  // A buffer holding `value` now.
  explicit Buffer(T value, ParamId id = ParamId::New())
      : Buffer(Param<T>::Initialized(id, std::move(value))) {}

  ParamId id() const { return id_; }

  // value() returns the current value (a handle for tensors), reading the
  // initial value on first use.
  T value() const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    if (!cell_->current.has_value()) {
      cell_->current = Detached(cell_->initial.val());
    }
    return *cell_->current;
  }

  // update() replaces the value, for this Buffer and every copy of it.
  void update(T value) const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    cell_->current = Detached(std::move(value));
  }

  // update_with() replaces the value with fn(current value) in one step, so
  // concurrent updates from copies of a module (running statistics updated by
  // two training threads) are not lost.
  template <class Fn>
  requires std::convertible_to<std::invoke_result_t<Fn&, const T&>, T>
  void update_with(Fn fn) const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    if (!cell_->current.has_value()) {
      cell_->current = Detached(cell_->initial.val());
    }
    cell_->current = Detached(fn(std::as_const(*cell_->current)));
  }

  // is_initialized() is true once the value exists.
  bool is_initialized() const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    return cell_->current.has_value() || cell_->initial.is_initialized();
  }

  // Device and shape, read without initializing.
  DeviceType lazy_device() const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    return cell_->current.has_value() ? cell_->current->device()
                                      : cell_->initial.lazy_device();
  }
  ShapeType lazy_shape() const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    return cell_->current.has_value() ? cell_->current->shape()
                                      : cell_->initial.lazy_shape();
  }

  // to_device() returns a Buffer on `device` with a cell of its own. A buffer
  // never read stays lazy (its initial value is retargeted).
  [[nodiscard]] Buffer to_device(const DeviceType& device) const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    if (cell_->current.has_value()) {
      return Buffer(cell_->current->to_device(device), id_);
    }
    return Buffer(cell_->initial.to_device(device));
  }

  // with_value() returns a Buffer with its own cell holding `value`, under the
  // same id: loading does not reach the other copies.
  [[nodiscard]] Buffer with_value(T value, ParamId id) const {
    return Buffer(std::move(value), id);
  }

  // shares_cell_with() is true when both are copies of one Buffer.
  bool shares_cell_with(const Buffer& other) const {
    return cell_ == other.cell_;
  }

 private:
  static T Detached(T value) {
    if constexpr (requires {
                    { value.detach() } -> std::same_as<T>;
                  }) {
      return value.detach();
    } else {
      return value;
    }
  }

  struct Cell {
    explicit Cell(Param<T> initial_value) : initial(std::move(initial_value)) {}
    std::mutex mutex;
    Param<T> initial;          // read once, on first value()
    std::optional<T> current;  // guarded by mutex
  };

  ParamId id_;
  std::shared_ptr<Cell> cell_;
};

}  // namespace kindling

#endif  // KINDLING_MODULE_BUFFER_H_
