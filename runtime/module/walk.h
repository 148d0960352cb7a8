// ForEachLeaf: the one walk over a module tree that visiting, mapping,
// counting and device moves are built on.
//
// It calls fn(path, leaf) for every Param and Buffer under `field`, in
// declaration order, with the leaf's dotted path. With a non-const `field` the
// leaf is a mutable reference, which is how mapping works: copy the module
// (cheap: copies share parameter state), then assign new leaves in place.
//
// Paths: a submodule field adds its name, a vector/array element its index;
// std::optional and std::variant add nothing (an absent optional has no
// leaves), matching PyTorch's state_dict keys.
#ifndef KINDLING_MODULE_WALK_H_
#define KINDLING_MODULE_WALK_H_

#include <cstddef>
#include <variant>

#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/param_path.h"

namespace kindling {

template <class Field, class Fn>
void ForEachLeaf(Field& field, ParamPath& path, Fn& fn) {
  using module_internal::BufferField;
  using module_internal::OptionalField;
  using module_internal::ParamField;
  using module_internal::SequenceField;
  using module_internal::VariantField;
  if constexpr (ParamField<Field> || BufferField<Field>) {
    fn(path.view(), field);
  } else if constexpr (Module<Field>) {
    using Traits = ModuleTraits<std::remove_cvref_t<Field>>;
    Traits::ForEachField(field, [&](const char* name, auto& member) {
      ScopedPathComponent component(path, std::string_view(name));
      ForEachLeaf(member, path, fn);
    });
  } else if constexpr (SequenceField<Field>) {
    size_t index = 0;
    for (auto& element : field) {
      ScopedPathComponent component(path, index++);
      ForEachLeaf(element, path, fn);
    }
  } else if constexpr (OptionalField<Field>) {
    if (field.has_value()) ForEachLeaf(*field, path, fn);
  } else if constexpr (VariantField<Field>) {
    std::visit([&](auto& alternative) { ForEachLeaf(alternative, path, fn); },
               field);
  }
  // Anything else is a constant: no leaves.
}

// ForEachLeaf() from the root of `module`.
template <class M, class Fn>
void ForEachLeaf(M& module, Fn&& fn) {
  ParamPath path;
  ForEachLeaf(module, path, fn);
}

}  // namespace kindling

#endif  // KINDLING_MODULE_WALK_H_
