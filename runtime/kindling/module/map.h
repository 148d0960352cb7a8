// Transformations of a whole module: mapping its parameters, moving it to a
// device, freezing it. Each returns a new module and leaves the input as it
// was; the copy is cheap because copies share parameter state.
//
// Lazy parameters stay lazy through ToDevice(), Fork(), NoGrad() and Valid():
// a lazy parameter is retargeted to the new device rather than initialized and
// copied (Burn initializes on all of these). Tied parameters (copies sharing
// one state) stay tied through ToDevice(), Fork() and NoGrad(): each threads
// one StateMemo through the walk. MapParams() calls the mapper once per path,
// so it keeps ties only if the mapper does.
#ifndef KINDLING_MODULE_MAP_H_
#define KINDLING_MODULE_MAP_H_

#include <string_view>
#include <type_traits>
#include <utility>

#include "kindling/core/state_memo.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"

namespace kindling {

// MapParams() returns a copy of `module` with every Param replaced by
// mapper(path, param), which must return a Param of the same type.
template <Module M, class Mapper>
[[nodiscard]] M MapParams(const M& module, Mapper&& mapper) {
  M result = module;
  ForEachLeaf(result, [&](std::string_view path, auto& leaf) {
    if constexpr (module_internal::ParamField<decltype(leaf)>) {
      leaf = mapper(path, std::as_const(leaf));
    }
  });
  return result;
}

// ToDevice() returns a copy of `module` whose parameters and buffers live on
// `device`. Lazy parameters are retargeted, not initialized.
template <Module M, class DeviceT>
[[nodiscard]] M ToDevice(const M& module, const DeviceT& device) {
  M result = module;
  StateMemo memo;
  ForEachLeaf(result, [&](std::string_view, auto& leaf) {
    if constexpr (module_internal::ParamField<decltype(leaf)>) {
      leaf = leaf.to_device(device, &memo);
    } else {
      leaf = leaf.to_device(device);
    }
  });
  return result;
}

// Fork() returns an independent copy on `device` for a worker that trains on
// its own (data parallelism): the same values, no shared storage, so in-place
// updates to one copy never reach the other. Lazy params stay lazy and are
// derived from the originals (one init run feeds both); tied params stay
// tied.
template <Module M, class DeviceT>
[[nodiscard]] M Fork(const M& module, const DeviceT& device) {
  M result = module;
  StateMemo memo;
  ForEachLeaf(result, [&](std::string_view, auto& leaf) {
    if constexpr (module_internal::ParamField<decltype(leaf)>) {
      leaf = leaf.fork(device, &memo);
    } else if (leaf.is_initialized()) {
      Param detached =
          Param<std::remove_cvref_t<decltype(leaf.value())>>::Initialized(
              leaf.id(), leaf.value())
              .fork(device);
      leaf = leaf.with_value(*detached, leaf.id());
    } else {
      leaf = leaf.to_device(device);
    }
  });
  return result;
}

// NoGrad() returns a copy whose parameters do not require gradients (frozen
// for fine-tuning). Lazy parameters stay lazy.
template <Module M>
[[nodiscard]] M NoGrad(const M& module) {
  M result = module;
  StateMemo memo;
  ForEachLeaf(result, [&](std::string_view, auto& leaf) {
    if constexpr (module_internal::ParamField<decltype(leaf)>) {
      leaf = leaf.set_require_grad(false, &memo);
    }
  });
  return result;
}

// Valid() returns the inference copy of a module: same values, no gradients.
template <Module M>
[[nodiscard]] M Valid(const M& module) {
  return NoGrad(module);
}

}  // namespace kindling

#endif  // KINDLING_MODULE_MAP_H_
