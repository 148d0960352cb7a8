// SyncOnceCell<T>: a value that is written at most once and read without a
// lock afterwards.
//
// Param<T> keeps its value in a SyncOnceCell so that many threads can read a
// lazily initialized parameter at once: the first reader runs the initializer,
// every other reader waits for it, and once the value is in place reads are a
// single acquire load.
//
// Example:
//
//   kindling::SyncOnceCell<Weights> cell;
//   const Weights& w = cell.get_or_init([] { return LoadWeights(); });
//
// Who runs, who waits:
//   * get_or_init(f) on an empty cell: exactly one caller, across any number of
//     concurrent callers, runs its `f`. The others block until that call has
//     returned, then all of them return a reference to the stored value. Their
//     own `f` is never called.
//   * get_or_init(f) on a full cell returns the value without locking and
//     without calling `f`.
//   * set(v) stores `v` if the cell is empty, with the same exclusion.
//
// If an initializer throws, the exception propagates to its caller and the cell
// stays empty; the next caller (one that was waiting, or a later one) runs its
// own initializer. If an initializer aborts the process, there is nothing left
// to observe. Kindling's own initializers never throw.
//
// REQUIRES: an initializer must not call get_or_init() or set() on the same
// cell; that deadlocks (in debug and release builds alike).
//
// A SyncOnceCell is neither copyable nor movable: other threads may be blocked
// on its lock or hold references to its value. It is constant-initialized when
// default-constructed, so it is safe to use as a global.
#ifndef KINDLING_CORE_SYNC_ONCE_CELL_H_
#define KINDLING_CORE_SYNC_ONCE_CELL_H_

#include <atomic>
#include <concepts>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"

namespace kindling {

template <class T>
class SyncOnceCell {
 public:
  // Creates an empty cell.
  constexpr SyncOnceCell() = default;

  // Creates a cell that already holds `value`.
  explicit SyncOnceCell(T value)
      : value_(std::move(value)), initialized_(true) {}

  SyncOnceCell(const SyncOnceCell&) = delete;
  SyncOnceCell& operator=(const SyncOnceCell&) = delete;

  // get() returns the value, or nullptr while the cell is empty. Lock-free.
  const T* get() const {
    if (ABSL_PREDICT_TRUE(initialized_.load(std::memory_order_acquire))) {
      return &*value_;
    }
    return nullptr;
  }

  // is_initialized() is true once a value is stored. Lock-free.
  bool is_initialized() const {
    return initialized_.load(std::memory_order_acquire);
  }

  // get_or_init() returns the stored value, running `init` to produce it if
  // the cell is empty. See the file comment for who runs and who waits.
  template <class F>
  requires std::invocable<F&> &&
      std::convertible_to<std::invoke_result_t<F&>, T>
  const T& get_or_init(F&& init) ABSL_ATTRIBUTE_LIFETIME_BOUND {
    if (const T* value = get()) return *value;
    return InitializeSlow(init);
  }

  // set() stores `value` and returns true if the cell was empty; otherwise it
  // leaves the cell unchanged and returns false (dropping `value`).
  [[nodiscard]] bool set(T value) {
    if (is_initialized()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    if (initialized_.load(std::memory_order_relaxed)) return false;
    value_.emplace(std::move(value));
    initialized_.store(true, std::memory_order_release);
    return true;
  }

 private:
  // Kept out of line so that get_or_init()'s fast path inlines to one load and
  // one branch.
  template <class F>
  ABSL_ATTRIBUTE_NOINLINE const T& InitializeSlow(F& init) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Another caller may have finished while this one waited for the lock.
    if (!initialized_.load(std::memory_order_relaxed)) {
      value_.emplace(init());
      // Publishes value_: pairs with the acquire load in get().
      initialized_.store(true, std::memory_order_release);
    }
    return *value_;
  }

  // Serializes initializers. A std::mutex rather than absl::Mutex because
  // Debian's Abseil is not built with ThreadSanitizer, which would then not see
  // the happens-before edge and report false races under --config=tsan.
  std::mutex mutex_;
  // Written once, under mutex_, before initialized_ becomes true; read only
  // after an acquire load has seen initialized_ == true.
  std::optional<T> value_;
  std::atomic<bool> initialized_{false};
};

}  // namespace kindling

#endif  // KINDLING_CORE_SYNC_ONCE_CELL_H_
