// Buffer<T>: module state that is saved and moved with the module but not
// trained, such as BatchNorm's running mean and variance (PyTorch calls these
// buffers; Burn, RunningState).
//
// Training updates a buffer from inside a forward pass that reads the module
// through a const reference, so the value lives behind a shared, locked cell:
// copies of a module share their buffers (as copies of a Param share their
// state) and update() is visible to all of them.
//
//   kindling::Buffer<Tensor<1>> running_mean(Tensor<1>::Zeros({64}, device));
//   running_mean.update(new_mean);      // from forward(), const module
//   Tensor<1> mean = running_mean.value();
//
// Thread safety: value() and update() may be called from any thread.
#ifndef KINDLING_MODULE_BUFFER_H_
#define KINDLING_MODULE_BUFFER_H_

#include <memory>
#include <mutex>
#include <utility>

#include "kindling/core/param_id.h"
#include "kindling/core/parameter.h"

namespace kindling {

template <Parameter T>
class Buffer {
 public:
  using DeviceType = typename T::DeviceType;
  using ShapeType = typename T::ShapeType;

  explicit Buffer(T value, ParamId id = ParamId::New())
      : id_(id), cell_(std::make_shared<Cell>(std::move(value))) {}

  ParamId id() const { return id_; }

  // value() returns a copy of the current value (a handle for tensors).
  T value() const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    return cell_->value;
  }

  // update() replaces the value, for this Buffer and every copy of it.
  void update(T value) const {
    std::lock_guard<std::mutex> lock(cell_->mutex);
    cell_->value = std::move(value);
  }

  DeviceType device() const { return value().device(); }
  ShapeType shape() const { return value().shape(); }

  // with_value() returns a Buffer with its own cell holding `value`, under the
  // same id: loading and device moves do not reach the other copies.
  [[nodiscard]] Buffer with_value(T value) const {
    return Buffer(std::move(value), id_);
  }

  // shares_cell_with() is true when both are copies of one Buffer.
  bool shares_cell_with(const Buffer& other) const {
    return cell_ == other.cell_;
  }

 private:
  struct Cell {
    explicit Cell(T initial) : value(std::move(initial)) {}
    std::mutex mutex;
    T value;
  };

  ParamId id_;
  std::shared_ptr<Cell> cell_;
};

}  // namespace kindling

#endif  // KINDLING_MODULE_BUFFER_H_
