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
#include <string_view>
#include <variant>

#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/param_path.h"

namespace kindling {

// ForEachOwnedLeaf() is the walk itself: fn(path, owner, leaf), where `owner`
// is the kTypeName of the module whose field holds the leaf (empty at the
// root). The checkpoint loader's PyTorch adapter keys its layout rules on it.
template <class Field, class Fn>
void ForEachOwnedLeaf(Field& field, ParamPath& path, std::string_view owner,
                      Fn& fn) {
  using module_internal::BufferField;
  using module_internal::OptionalField;
  using module_internal::ParamField;
  using module_internal::SequenceField;
  using module_internal::VariantField;
  if constexpr (ParamField<Field> || BufferField<Field>) {
    fn(path.view(), owner, field);
  } else if constexpr (Module<Field>) {
    using Traits = ModuleTraits<std::remove_cvref_t<Field>>;
    Traits::ForEachField(field, [&](const char* name, auto& member) {
      ScopedPathComponent component(path, std::string_view(name));
      ForEachOwnedLeaf(member, path, std::string_view(Traits::kTypeName), fn);
    });
  } else if constexpr (SequenceField<Field>) {
    size_t index = 0;
    for (auto& element : field) {
      ScopedPathComponent component(path, index++);
      ForEachOwnedLeaf(element, path, owner, fn);
    }
  } else if constexpr (OptionalField<Field>) {
    if (field.has_value()) ForEachOwnedLeaf(*field, path, owner, fn);
  } else if constexpr (VariantField<Field>) {
    std::visit(
        [&](auto& alternative) {
          ForEachOwnedLeaf(alternative, path, owner, fn);
        },
        field);
  }
  // Anything else is a constant: no leaves.
}

// ForEachLeaf() is ForEachOwnedLeaf() for callers that only need the path.
template <class Field, class Fn>
void ForEachLeaf(Field& field, ParamPath& path, Fn& fn) {
  auto without_owner = [&fn](std::string_view leaf_path, std::string_view,
                             auto& leaf) { fn(leaf_path, leaf); };
  ForEachOwnedLeaf(field, path, std::string_view(), without_owner);
}

// ForEachOwnedLeaf() from the root of `module`.
template <class M, class Fn>
void ForEachOwnedLeaf(M& module, Fn&& fn) {
  ParamPath path;
  ForEachOwnedLeaf(module, path, std::string_view(), fn);
}

// ForEachLeaf() from the root of `module`.
template <class M, class Fn>
void ForEachLeaf(M& module, Fn&& fn) {
  ParamPath path;
  ForEachLeaf(module, path, fn);
}

}  // namespace kindling

#endif  // KINDLING_MODULE_WALK_H_
