// Field kinds: how runtime/module's generic code recognizes what a module
// field holds. A field is a leaf (Param or Buffer), a submodule, a container
// of those (vector, array, optional, variant, tuple), or a constant (anything
// that holds no parameters: numbers, strings, std::monostate, config structs).
//
// Every walk (visit, map, records, device moves, printing, erased walks)
// handles the kinds below and treats the rest as constants. A type that names
// a parameter type but is none of these kinds (std::map<std::string, Linear>,
// std::unique_ptr<Param<T>>, std::list<Linear>, Param<T>*) would hold
// parameters no walk reaches; RequireConstantField<Field>() refuses it at
// compile time, so a parameter is never skipped in silence. kindling-gen
// reports the same types with a source location; the check here catches what
// it cannot see (a class template's dependent fields, hand-written traits).
//
// What neither can see: a struct without ModuleTraits that holds a Param as a
// plain member (C++ has no reflection to look inside it). kindling-gen reports
// that struct where its type is known when it parses the header.
#ifndef KINDLING_MODULE_FIELD_KINDS_H_
#define KINDLING_MODULE_FIELD_KINDS_H_

#include <array>
#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/module/buffer.h"
#include "kindling/module/module_traits.h"

namespace kindling::module_internal {

template <class T>
struct IsParamType : std::false_type {};
template <class T>
struct IsParamType<Param<T>> : std::true_type {};

template <class T>
struct IsBufferType : std::false_type {};
template <class T>
struct IsBufferType<Buffer<T>> : std::true_type {};

// LeafValue<Leaf>::type is the value a Param<T> or Buffer<T> holds: T.
template <class Leaf>
struct LeafValue;
template <class T>
struct LeafValue<Param<T>> {
  using type = T;
};
template <class T>
struct LeafValue<Buffer<T>> {
  using type = T;
};

template <class T>
struct IsVectorType : std::false_type {};
template <class T, class A>
struct IsVectorType<std::vector<T, A>> : std::true_type {};

template <class T>
struct IsArrayType : std::false_type {};
template <class T, size_t N>
struct IsArrayType<std::array<T, N>> : std::true_type {};

template <class T>
struct IsOptionalType : std::false_type {};
template <class T>
struct IsOptionalType<std::optional<T>> : std::true_type {};

template <class T>
struct IsVariantType : std::false_type {};
template <class... Ts>
struct IsVariantType<std::variant<Ts...>> : std::true_type {};

// std::pair is a tuple of two for every walk: elements `.0` and `.1`.
template <class T>
struct IsTupleType : std::false_type {};
template <class... Ts>
struct IsTupleType<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct IsTupleType<std::pair<A, B>> : std::true_type {};

template <class T>
concept ParamField = IsParamType<std::remove_cvref_t<T>>::value;
template <class T>
concept BufferField = IsBufferType<std::remove_cvref_t<T>>::value;
template <class T>
concept SequenceField = IsVectorType<std::remove_cvref_t<T>>::value ||
    IsArrayType<std::remove_cvref_t<T>>::value;
template <class T>
concept OptionalField = IsOptionalType<std::remove_cvref_t<T>>::value;
template <class T>
concept VariantField = IsVariantType<std::remove_cvref_t<T>>::value;
template <class T>
concept TupleField = IsTupleType<std::remove_cvref_t<T>>::value;

// MentionsParameters<T>: whether T names a leaf or a module anywhere in its
// type: itself, through a pointer, reference or C array, or as a type
// argument of a class template (recursively). Only template arguments are
// followed, never members, so recursive types terminate.
template <class T>
struct MentionsParameters;

template <class T>
inline constexpr bool kMentionsParameters =
    MentionsParameters<std::remove_cv_t<T>>::value;

template <class T>
struct MentionsParameters
    : std::bool_constant<IsParamType<T>::value || IsBufferType<T>::value ||
                         ModuleTraits<T>::kIsModule> {};
template <class T>
struct MentionsParameters<T*> : std::bool_constant<kMentionsParameters<T>> {};
template <class T>
struct MentionsParameters<T&> : std::bool_constant<kMentionsParameters<T>> {};
template <class T>
struct MentionsParameters<T&&> : std::bool_constant<kMentionsParameters<T>> {};
template <class T>
struct MentionsParameters<T[]> : std::bool_constant<kMentionsParameters<T>> {};
template <class T, size_t N>
struct MentionsParameters<T[N]> : std::bool_constant<kMentionsParameters<T>> {};
template <class T, size_t N>
struct MentionsParameters<std::array<T, N>>
    : std::bool_constant<kMentionsParameters<T>> {};
template <template <class...> class Template, class... Ts>
struct MentionsParameters<Template<Ts...>>
    : std::bool_constant<IsParamType<Template<Ts...>>::value ||
                         IsBufferType<Template<Ts...>>::value ||
                         ModuleTraits<Template<Ts...>>::kIsModule ||
                         (kMentionsParameters<Ts> || ...)> {};

// ConstantField: a field no walk looks into. std::monostate (an empty variant
// alternative) is one.
template <class T>
concept ConstantField =
    !ParamField<T> && !BufferField<T> && !Module<T> && !SequenceField<T> &&
    !OptionalField<T> && !VariantField<T> && !TupleField<T> &&
    !kMentionsParameters<std::remove_cvref_t<T>>;

// FieldTypeTheWalksCannotReach<Field>: instantiated only for a field type
// that holds parameters no walk can reach, to stop the build. The compiler
// names `Field` in the "required from" line of the error.
template <class Field>
struct FieldTypeTheWalksCannotReach {
  static_assert(ConstantField<Field>,
                "kindling: this module field type holds parameters (a Param, "
                "Buffer or module) where no module walk can reach them; hold "
                "them directly or in std::vector, std::array, std::optional, "
                "std::variant, std::tuple or std::pair. The field type is "
                "the template argument of FieldTypeTheWalksCannotReach "
                "above.");
  static constexpr bool value = true;
};

// RequireConstantField<Field>() is what every walk's "anything else" branch
// calls: it compiles for constants and stops the build for anything else.
template <class Field>
constexpr void RequireConstantField() {
  static_assert(
      FieldTypeTheWalksCannotReach<std::remove_cvref_t<Field>>::value);
}

}  // namespace kindling::module_internal

#endif  // KINDLING_MODULE_FIELD_KINDS_H_
