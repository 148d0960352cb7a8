// CountingParameter: a stand-in for a tensor that counts what happens to it.
//
// runtime/core sits below runtime/tensor, so its tests and benchmarks need a
// Parameter of their own. Like a tensor, a CountingParameter is a refcounted
// handle to "storage" (here a vector of floats); every storage allocation and
// every init-function call is counted, so tests can assert that copying a lazy
// Param allocates nothing and runs nothing.
#ifndef KINDLING_TESTS_CORE_COUNTING_PARAMETER_H_
#define KINDLING_TESTS_CORE_COUNTING_PARAMETER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/core/param_id.h"

namespace kindling::testing {

// Counts storage allocations and init-function calls, process-wide.
struct Counters {
  static std::atomic<int64_t>& storage_allocations() {
    static std::atomic<int64_t> count{0};
    return count;
  }
  static std::atomic<int64_t>& init_calls() {
    static std::atomic<int64_t> count{0};
    return count;
  }
  // Storages allocated and not yet freed.
  static std::atomic<int64_t>& live_storages() {
    static std::atomic<int64_t> count{0};
    return count;
  }
  static void Reset() {
    storage_allocations() = 0;
    init_calls() = 0;
  }
};

class CountingParameter {
 public:
  using DeviceType = int;
  using ShapeType = std::vector<int64_t>;

  // Allocates storage of prod(shape) floats, all equal to `fill`.
  CountingParameter(ShapeType shape, float fill, DeviceType device,
                    bool require_grad)
      : shape_(std::move(shape)), device_(device), require_grad_(require_grad) {
    int64_t count = 1;
    for (int64_t dim : shape_) count *= dim;
    storage_ = std::shared_ptr<std::vector<float>>(
        new std::vector<float>(count, fill), [](std::vector<float>* storage) {
          Counters::live_storages().fetch_sub(1, std::memory_order_relaxed);
          delete storage;
        });
    Counters::storage_allocations().fetch_add(1, std::memory_order_relaxed);
    Counters::live_storages().fetch_add(1, std::memory_order_relaxed);
  }

  DeviceType device() const { return device_; }
  ShapeType shape() const { return shape_; }
  bool is_require_grad() const { return require_grad_; }
  CountingParameter set_require_grad(bool require_grad) const {
    CountingParameter result = *this;  // shares storage, like a tensor
    result.require_grad_ = require_grad;
    return result;
  }

  // Copies the storage to `device` (a new allocation), like a tensor move.
  CountingParameter to_device(DeviceType device) const {
    CountingParameter result(shape_, 0.0f, device, require_grad_);
    *result.storage_ = *storage_;
    return result;
  }

  const std::vector<float>& data() const { return *storage_; }
  const void* storage_address() const { return storage_.get(); }

  // Returns a new parameter (new storage) with every element multiplied.
  CountingParameter Scaled(float factor) const {
    CountingParameter result(shape_, 0.0f, device_, require_grad_);
    for (size_t i = 0; i < storage_->size(); ++i) {
      (*result.storage_)[i] = (*storage_)[i] * factor;
    }
    return result;
  }

 private:
  ShapeType shape_;
  DeviceType device_;
  bool require_grad_;
  std::shared_ptr<std::vector<float>> storage_;
};

using CountingParam = Param<CountingParameter>;

// Each call returns a distinct fill value, so two init runs are told apart.
inline CountingParameter InitWithNextFill(const int& device, bool require_grad,
                                          std::vector<int64_t> shape) {
  static std::atomic<int> next_fill{1};
  Counters::init_calls().fetch_add(1, std::memory_order_relaxed);
  return CountingParameter(std::move(shape),
                           static_cast<float>(next_fill.fetch_add(1)), device,
                           require_grad);
}

// A lazy CountingParam of `shape` whose init function counts its calls and
// produces a distinct value on every call.
inline CountingParam LazyCountingParam(std::vector<int64_t> shape,
                                       int device = 0,
                                       bool require_grad = true) {
  return CountingParam::Uninitialized(
      ParamId::New(),
      [shape](const int& init_device, bool init_require_grad) {
        return InitWithNextFill(init_device, init_require_grad, shape);
      },
      device, require_grad, shape);
}

}  // namespace kindling::testing

#endif  // KINDLING_TESTS_CORE_COUNTING_PARAMETER_H_
