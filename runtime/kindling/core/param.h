// Param<T>: a trainable value (usually a tensor) with an identity, lazy
// initialization and load/save transformations.
//
// Modules hold their weights as Param<Tensor<...>>. Building a model for
// inference and then loading a checkpoint should never allocate the random
// initial weights the checkpoint is about to replace, so a Param can be created
// *uninitialized*: it keeps an init function plus the device, shape and
// require-grad flag the value will have, and runs the function on first read.
//
//   kindling::PhiloxGenerator generator(/*seed=*/42);
//   auto weight = kindling::Param<Tensor<2>>::Uninitialized(
//       kindling::ParamId::New(),
//       [&generator](const Device& device, bool require_grad) {
//         return Tensor<2>::RandomNormal({512, 256}, generator, /*mean=*/0,
//                                        /*std=*/0.02, device)
//             .set_require_grad(require_grad);
//       },
//       Device::Cpu(), /*require_grad=*/true, Shape{512, 256});
//   weight.lazy_shape();          // {512, 256}; nothing allocated
//   const Tensor<2>& w = *weight; // runs the init function now
//
// The laziness contract:
//   * Reading the value (val(), operator*, operator->, consume()) initializes.
//     Nothing that only needs metadata does: lazy_device(), lazy_shape(),
//     lazy_is_require_grad(), id(), copying, setting mappers.
//   * Copies share one state. Copying a Param costs one refcount increment and
//     allocates nothing, lazy or not. All copies see the same value: the init
//     function runs at most once however many copies read it, and a copy read
//     after the original equals it. (Burn's first lazy clone gave each clone
//     its own init run, so clones held different random weights; see
//     docs/params.md.)
//   * Operations that change the value (map, init_mapper, set_require_grad,
//     load) return a Param with a state of its own; the other copies keep
//     theirs. On a still-lazy Param, init_mapper and set_require_grad stay
//     lazy: the new state is *derived*, computed on first read as f(original
//     value). The original's init function therefore still runs at most once,
//     and a tied copy (say `decoder.embed =
//     encoder.embed.set_require_grad(false)`) holds the same weights as its
//     source.
//   * load() never runs the init function.
//
// Thread safety: every const member function may be called from any number of
// threads at once; concurrent first reads run the init function once (see
// SyncOnceCell) and all readers get that value. Assigning to a Param while
// another thread reads the same Param object is a data race, as for any C++
// value type. Init and map functions must be safe to call from any thread.
//
// A moved-from Param may only be assigned to or destroyed; reading it aborts.
#ifndef KINDLING_CORE_PARAM_H_
#define KINDLING_CORE_PARAM_H_

#include <concepts>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/core/param_id.h"
#include "kindling/core/param_mapper.h"
#include "kindling/core/parameter.h"
#include "kindling/core/state_memo.h"
#include "kindling/core/sync_once_cell.h"

namespace kindling {

// IndependentCopy() returns `value` on `device`, sharing no storage with it:
// the device move, plus a copy when the move was a no-op (same device) for
// types that can tell, like tensors. What Fork() gives each worker.
template <Parameter T>
T IndependentCopy(const T& value,
                  const typename T::DeviceType& device) requires requires {
  { value.to_device(device) } -> std::same_as<T>;
}
{
  T copy = value.to_device(device);
  if constexpr (requires {
                  { copy.shares_storage_with(value) } -> std::same_as<bool>;
                  { copy.clone() } -> std::same_as<T>;
                }) {
    if (copy.shares_storage_with(value)) return copy.clone();
  }
  return copy;
}

// AsParamValue() is what a Param stores as its value: for a type with
// autodiff (Tensor's as_param_leaf), `value` detached from any graph and made
// a leaf under the Param's id, so gradients come back keyed by `id`; other
// types unchanged. Every new value of a Param goes through it.
template <Parameter T>
T AsParamValue(ParamId id, T value) {
  if constexpr (requires {
                  { value.as_param_leaf(id) } -> std::same_as<T>;
                }) {
    return value.as_param_leaf(id);
  } else {
    return value;
  }
}

template <Parameter T>
class Param {
 public:
  using ValueType = T;
  using DeviceType = typename T::DeviceType;
  using ShapeType = typename T::ShapeType;
  // InitFn is called as init(device, require_grad). It is shared by copies and
  // by derived params, so it must be callable many times and from any thread.
  using InitFn = std::function<T(const DeviceType& device, bool require_grad)>;
  using MapFn = std::function<T(T)>;

  // Initialized() wraps a value that already exists.
  static Param Initialized(ParamId id, T value) {
    return Param(
        id, std::make_shared<State>(AsParamValue(id, std::move(value))), {});
  }

  // Uninitialized() creates a lazy Param: `init` runs on first read, with
  // `device` and `require_grad`. `shape` is what lazy_shape() reports until
  // then.
  // REQUIRES: `init` produces a value of `shape` on the device it is given.
  // Checked when it runs (in every build): a value that breaks the promise
  // aborts, naming both shapes and devices, instead of reaching NumParams or a
  // checkpoint's shape check with a wrong lazy_shape(). Values derived lazily
  // (init_mapper(), set_require_grad(), fork()) are checked against the shape
  // and device they inherit in the same way.
  static Param Uninitialized(ParamId id, InitFn init, DeviceType device,
                             bool require_grad, ShapeType shape) {
    KINDLING_CHECK(init != nullptr, "Param %s: empty init function",
                   id.ToString());
    return Param(
        id,
        std::make_shared<State>(
            LazySpec{std::move(device), require_grad, std::move(shape)},
            std::make_shared<const InitFn>(std::move(init))),
        {});
  }

  ParamId id() const { return id_; }

  // val() returns the value, initializing it on first call. The reference is
  // valid as long as this Param (or a copy sharing its state) lives and is not
  // assigned to.
  const T& val() const {
    KINDLING_CHECK(state_ != nullptr, "Param %s read after move",
                   id_.ToString());
    if (const T* value = state_->cell.get()) return *value;
    return Resolve(id_, *state_);
  }
  const T& operator*() const { return val(); }
  const T* operator->() const { return &val(); }

  // is_initialized() is true once the value exists, whichever copy read it.
  bool is_initialized() const {
    return state_ != nullptr && state_->cell.is_initialized();
  }

  // shares_state_with() is true when both are copies of one Param: they hold
  // (or will hold) the same value.
  bool shares_state_with(const Param& other) const {
    return state_ == other.state_;
  }

  // consume() returns the id, the value (initializing it) and the mapper, and
  // leaves this Param moved-from.
  std::tuple<ParamId, T, ParamMapper<T>> consume() && {
    T value = val();
    state_.reset();
    return {id_, std::move(value), std::move(mapper_)};
  }

  // into_value() returns the value (initializing it); this Param is moved-from.
  T into_value() && { return std::get<1>(std::move(*this).consume()); }

  // map() returns a Param holding func(val()), with the same id and mapper.
  // It initializes this Param; use init_mapper() to stay lazy.
  template <class F>
  requires std::invocable<F, T> &&
      std::convertible_to<std::invoke_result_t<F, T>, T>
  [[nodiscard]] Param map(F&& func) const {
    return Param(id_,
                 std::make_shared<State>(
                     AsParamValue(id_, std::forward<F>(func)(val()))),
                 mapper_);
  }

  // init_mapper() returns a Param whose value is func(this value). While this
  // Param is lazy the result is lazy too and nothing runs until it is read;
  // otherwise it is map(func).
  // With a `memo`, copies sharing a state come out sharing one.
  [[nodiscard]] Param init_mapper(MapFn func, StateMemo* memo = nullptr) const {
    return Memoized(memo, [&] {
      return DeriveOrMap(std::move(func), lazy_is_require_grad());
    });
  }

  // set_require_grad() returns a Param whose value has the given flag. Stays
  // lazy when this Param is lazy. With a `memo`, copies sharing a state come
  // out sharing one (see StateMemo).
  [[nodiscard]] Param set_require_grad(bool require_grad,
                                       StateMemo* memo = nullptr) const {
    return Memoized(memo, [&] {
      return DeriveOrMap(
          [require_grad](T value) {
            return value.set_require_grad(require_grad);
          },
          require_grad);
    });
  }

  // to_device() returns a Param whose value lives on `device`. A lazy Param
  // stays lazy and is *retargeted*: its init function will run directly on
  // `device`, so nothing is allocated on the old one. An initialized value is
  // moved with T::to_device(). With a `memo`, copies sharing a state come out
  // sharing one.
  //
  // Retargeting gives the result a state of its own: if both this Param and
  // the result are read later, each runs the init function on its device. A
  // module-wide move passes one memo, so tied copies are retargeted together.
  [[nodiscard]] Param to_device(const DeviceType& device,
                                StateMemo* memo = nullptr) const requires
      requires(const T& value) {
    { value.to_device(device) } -> std::same_as<T>;
  }
  {
    KINDLING_CHECK(state_ != nullptr, "Param %s used after move",
                   id_.ToString());
    return Param(id_, RetargetedState(state_, device, memo), mapper_);
  }

  // fork() returns an independent copy on `device`, for a worker that trains
  // on its own: the same value, but storage of its own, so in-place updates
  // to one never reach the other. A lazy Param's fork stays lazy and is
  // derived from it, so both see one init run. With a `memo`, copies sharing
  // a state come out sharing one.
  [[nodiscard]] Param fork(const DeviceType& device,
                           StateMemo* memo = nullptr) const requires
      requires(const T& value) {
    { value.to_device(device) } -> std::same_as<T>;
  }
  {
    return Memoized(memo, [&] {
      return DeriveOrMap(
          [device](T value) { return IndependentCopy(value, device); },
          lazy_is_require_grad(), device);
    });
  }

  // load_mapper() / save_mapper() return a copy (sharing the state) whose
  // load or save transformation is `func`, replacing any previous one.
  [[nodiscard]] Param load_mapper(MapFn func) const {
    return Param(id_, state_, mapper_.with_load(std::move(func)));
  }
  [[nodiscard]] Param save_mapper(MapFn func) const {
    return Param(id_, state_, mapper_.with_save(std::move(func)));
  }
  const ParamMapper<T>& mapper() const { return mapper_; }

  // with_value() returns a Param holding `value`, with this Param's id and
  // mapper and a state of its own. It never runs the init function.
  [[nodiscard]] Param with_value(T value) const {
    return Param(id_,
                 std::make_shared<State>(AsParamValue(id_, std::move(value))),
                 mapper_);
  }

  // load() returns with_value() of `value` passed through the load mapper and
  // given this Param's require-grad flag: what loading a checkpoint does. It
  // never runs the init function and leaves this Param and its copies
  // untouched.
  [[nodiscard]] Param load(T value) const {
    T mapped = mapper_.on_load(std::move(value));
    const bool require_grad = lazy_is_require_grad();
    if (mapped.is_require_grad() != require_grad) {
      mapped = mapped.set_require_grad(require_grad);
    }
    return with_value(std::move(mapped));
  }

  // value_for_save() returns val() passed through the save mapper.
  T value_for_save() const { return mapper_.on_save(val()); }

  // with_id() returns a copy (sharing the state) with another id, e.g. the
  // one a checkpoint recorded. A value that carries its Param's id (a
  // tensor: AsParamValue) cannot be shared under two ids, so it gets a state
  // of its own holding the value re-tagged with `id` (lazy stays lazy).
  [[nodiscard]] Param with_id(ParamId id) const {
    Param result(id, state_, mapper_);
    if constexpr (requires(const T& value) {
                    { value.as_param_leaf(id) } -> std::same_as<T>;
                  }) {
      if (id != id_) {
        return result.DeriveOrMap(
            [id](T value) { return AsParamValue(id, std::move(value)); },
            lazy_is_require_grad());
      }
    }
    return result;
  }

  // The device, shape and require-grad flag the value has or will have, read
  // without initializing.
  DeviceType lazy_device() const {
    if (const T* value = InitializedValue()) return value->device();
    return state_->spec->device;
  }
  ShapeType lazy_shape() const {
    if (const T* value = InitializedValue()) return value->shape();
    return state_->spec->shape;
  }
  bool lazy_is_require_grad() const {
    if (const T* value = InitializedValue()) return value->is_require_grad();
    return state_->spec->require_grad;
  }

  // Prints "Param(<id>, lazy)" or "Param(<id>, initialized)".
  friend std::ostream& operator<<(std::ostream& os, const Param& param) {
    return os << "Param(" << param.id_ << ", "
              << (param.is_initialized() ? "initialized" : "lazy") << ")";
  }

 private:
  // What an uninitialized value will be, known without running anything.
  struct LazySpec {
    DeviceType device;
    bool require_grad;
    ShapeType shape;
  };

  // One value, shared by all copies of a Param. Three kinds:
  //   initialized: `cell` full from the start, no spec;
  //   root lazy:   `init` produces the value from spec's device and flag;
  //   derived:     `transform(value of parent)` produces it.
  struct State {
    explicit State(T value) : cell(std::move(value)) {}
    State(LazySpec lazy_spec, std::shared_ptr<const InitFn> init_fn)
        : spec(std::move(lazy_spec)), init(std::move(init_fn)) {}
    State(LazySpec lazy_spec, std::shared_ptr<State> parent_state,
          MapFn transform_fn)
        : spec(std::move(lazy_spec)),
          transform(std::move(transform_fn)),
          parent(std::move(parent_state)) {}

    // The parent of a derived state that has not been initialized yet.
    std::shared_ptr<State> LockedParent() {
      std::lock_guard<std::mutex> lock(parent_mutex);
      return parent;
    }

    SyncOnceCell<T> cell;
    // Immutable after construction, so metadata reads need no lock.
    const std::optional<LazySpec> spec;
    const std::shared_ptr<const InitFn> init;
    const MapFn transform;
    // A derived state's source, released once the value exists so that the
    // parent's value can be freed when nothing else holds it. Guarded by
    // parent_mutex because to_device() may read it while another thread
    // initializes.
    std::mutex parent_mutex;
    std::shared_ptr<State> parent;
  };

  Param(ParamId id, std::shared_ptr<State> state, ParamMapper<T> mapper)
      : id_(id), state_(std::move(state)), mapper_(std::move(mapper)) {}

  // Runs the initializer of `state` (and of its lazy ancestors) once, for the
  // Param `id`. The value is checked against the lazy spec, then made a leaf
  // under `id` (AsParamValue).
  static const T& Resolve(const ParamId& id, State& state) {
    const T& value = state.cell.get_or_init([&id, &state]() -> T {
      if (state.init != nullptr) {
        T produced =
            (*state.init)(state.spec->device, state.spec->require_grad);
        CheckMatchesSpec(id, *state.spec, produced, "init function");
        return AsParamValue(id, std::move(produced));
      }
      T produced = state.transform(Resolve(id, *state.LockedParent()));
      CheckMatchesSpec(id, *state.spec, produced, "derived value");
      return AsParamValue(id, std::move(produced));
    });
    // A derived state no longer needs its parent, which may be the last holder
    // of the original weights. Released only after get_or_init() has published
    // the value, so RetargetedState() never sees "no parent" with the cell
    // still empty.
    if (state.init == nullptr) {
      std::lock_guard<std::mutex> lock(state.parent_mutex);
      state.parent.reset();
    }
    return value;
  }

  // Aborts unless `produced` has the shape and device `spec` promised; checked
  // before the value is published, so no reader ever sees a broken promise.
  static void CheckMatchesSpec(const ParamId& id, const LazySpec& spec,
                               const T& produced, const char* producer) {
    const ShapeType shape = produced.shape();
    const DeviceType device = produced.device();
    KINDLING_CHECK(shape == spec.shape && device == spec.device,
                   "Param %s: the %s produced shape %s on device %s, but the "
                   "lazy param promised shape %s on device %s",
                   id.ToString(), producer, internal::MetadataToString(shape),
                   internal::MetadataToString(device),
                   internal::MetadataToString(spec.shape),
                   internal::MetadataToString(spec.device));
  }

  // The state `state` moved to `device`: lazy states are rebuilt on the device
  // (a derived state over its retargeted parent), values are moved. With a
  // memo, every state on the way, parents included, is retargeted once, so
  // derived params stay tied to their sources.
  static std::shared_ptr<State> RetargetedState(
      const std::shared_ptr<State>& state, const DeviceType& device,
      StateMemo* memo) {
    if (memo != nullptr) {
      if (std::shared_ptr<void> found = memo->Find(state.get())) {
        return std::static_pointer_cast<State>(found);
      }
    }
    std::shared_ptr<State> result =
        RetargetedStateUnmemoized(state, device, memo);
    if (memo != nullptr) memo->Insert(state, result);
    return result;
  }
  static std::shared_ptr<State> RetargetedStateUnmemoized(
      const std::shared_ptr<State>& state, const DeviceType& device,
      StateMemo* memo) {
    if (const T* value = state->cell.get()) {
      return std::make_shared<State>(value->to_device(device));
    }
    LazySpec spec = *state->spec;
    spec.device = device;
    if (state->init != nullptr) {
      return std::make_shared<State>(std::move(spec), state->init);
    }
    std::shared_ptr<State> parent = state->LockedParent();
    if (parent == nullptr) {  // initialized since the check above
      return std::make_shared<State>(state->cell.get()->to_device(device));
    }
    return std::make_shared<State>(std::move(spec),
                                   RetargetedState(parent, device, memo),
                                   state->transform);
  }

  // Runs `make` unless `memo` already maps this Param's state; records the
  // result's state otherwise.
  template <class Make>
  Param Memoized(StateMemo* memo, Make make) const {
    if (memo == nullptr) return make();
    if (std::shared_ptr<void> found = memo->Find(state_.get())) {
      return Param(id_, std::static_pointer_cast<State>(found), mapper_);
    }
    Param result = make();
    memo->Insert(state_, result.state_);
    return result;
  }

  // The value if it exists, else nullptr (then the state has a spec).
  const T* InitializedValue() const {
    KINDLING_CHECK(state_ != nullptr, "Param %s read after move",
                   id_.ToString());
    return state_->cell.get();
  }

  // map(func) if initialized; else a lazy state derived through `func`, with
  // the given flag (and device, when it changes).
  Param DeriveOrMap(MapFn func, bool require_grad,
                    std::optional<DeviceType> device = std::nullopt) const {
    if (InitializedValue() != nullptr) return map(func);
    LazySpec spec = *state_->spec;
    spec.require_grad = require_grad;
    if (device.has_value()) spec.device = *device;
    return Param(
        id_, std::make_shared<State>(std::move(spec), state_, std::move(func)),
        mapper_);
  }

  ParamId id_;
  std::shared_ptr<State> state_;
  ParamMapper<T> mapper_;
};

}  // namespace kindling

#endif  // KINDLING_CORE_PARAM_H_
