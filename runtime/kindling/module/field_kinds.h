// Field kinds: how runtime/module's generic code recognizes what a module
// field holds. A field is a leaf (Param or Buffer), a submodule, a container
// of those (vector, array, optional, variant), or a constant (anything else).
#ifndef KINDLING_MODULE_FIELD_KINDS_H_
#define KINDLING_MODULE_FIELD_KINDS_H_

#include <array>
#include <cstddef>
#include <optional>
#include <type_traits>
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

}  // namespace kindling::module_internal

#endif  // KINDLING_MODULE_FIELD_KINDS_H_
