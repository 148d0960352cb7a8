// ForEachLeaf: the one walk over a module tree that visiting, mapping,
// counting and device moves are built on.
//
// It calls fn(path, leaf) for every Param and Buffer under `field`, in
// declaration order, with the leaf's dotted path. With a non-const `field` the
// leaf is a mutable reference, which is how mapping works: copy the module
// (cheap: copies share parameter state), then assign new leaves in place.
//
// Paths: a submodule field adds its name, a vector/array element its index, a
// tuple (or pair) element its position ("pair.0", "pair.1"); std::optional
// and std::variant add nothing (an absent optional and std::monostate have no
// leaves), matching PyTorch's state_dict keys. A field type that holds
// parameters in any other way does not compile (see field_kinds.h).
#ifndef KINDLING_MODULE_WALK_H_
#define KINDLING_MODULE_WALK_H_

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/param_path.h"

namespace kindling {
namespace module_internal {

// ForEachTupleElement() calls fn(index, element) for each element of a
// std::tuple or std::pair, in order; `Tuple` may be const.
template <class Tuple, class Fn>
void ForEachTupleElement(Tuple& tuple, Fn&& fn) {
  constexpr size_t kSize = std::tuple_size_v<std::remove_cv_t<Tuple>>;
  [&]<size_t... I>(std::index_sequence<I...>) {
    (fn(I, std::get<I>(tuple)), ...);
  }
  (std::make_index_sequence<kSize>());
}

}  // namespace module_internal

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
  using module_internal::TupleField;
  using module_internal::VariantField;
  if constexpr (ParamField<Field> || BufferField<Field>) {
    fn(path.view(), owner, field);
  } else if constexpr (Module<Field>) {
    using Traits = ModuleTraits<std::remove_cvref_t<Field>>;
    ForEachField(field, [&](const char* name, auto& member) {
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
  } else if constexpr (TupleField<Field>) {
    module_internal::ForEachTupleElement(
        field, [&](size_t index, auto& element) {
          ScopedPathComponent component(path, index);
          ForEachOwnedLeaf(element, path, owner, fn);
        });
  } else {
    // A constant: no leaves. Anything else stops the build here.
    module_internal::RequireConstantField<Field>();
  }
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
