// Records: the saved state of a module, and moving state between a module and
// its record.
//
// RecordOf<T> is the record type of a field of type T: a ParamRecord for a
// Param, a BufferRecord for a Buffer, the generated <Name>Record for a module,
// and the same container around the element's record for vector, array,
// optional, variant, tuple and pair. Constants (std::monostate among them)
// have an EmptyRecord: they are not saved. A type that holds parameters in any
// other way has no record and does not compile (see field_kinds.h).
//
//   demo::MlpRecord record = kindling::IntoRecord(model);   // values + ids
//   absl::Status status = kindling::LoadRecord(other, record);
//
// LoadRecord() is all-or-nothing: it checks every entry (presence, shape,
// container sizes) and leaves the module exactly as it was on any error,
// listing every problem with its parameter path. Loading never runs a lazy
// parameter's init function. Each value lands on the device its parameter or
// buffer lives (or, lazy, will live) on: a record saved on the CPU loads into
// a module on cuda:N with every value moved there.
#ifndef KINDLING_MODULE_RECORD_H_
#define KINDLING_MODULE_RECORD_H_

#include <array>
#include <concepts>
#include <cstddef>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/module/buffer.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/param_path.h"

namespace kindling {

// ParamRecord<T>: a saved parameter. An empty `value` means "not in the
// record" (a partial checkpoint).
template <class T>
struct ParamRecord {
  ParamId id = ParamId::FromValue(0);
  std::optional<T> value;
};

// BufferRecord<T>: a saved buffer.
template <class T>
struct BufferRecord {
  ParamId id = ParamId::FromValue(0);
  std::optional<T> value;
};

// EmptyRecord: the record of a field that holds no state.
struct EmptyRecord {};

namespace module_internal {

template <class T>
struct RecordOfImpl {
  static_assert(FieldTypeTheWalksCannotReach<T>::value);
  using type = EmptyRecord;
};
template <class T>
requires(ModuleTraits<T>::kIsModule) struct RecordOfImpl<T> {
  using type = typename ModuleTraits<T>::Record;
};
template <class T>
struct RecordOfImpl<Param<T>> {
  using type = ParamRecord<T>;
};
template <class T>
struct RecordOfImpl<Buffer<T>> {
  using type = BufferRecord<T>;
};
template <class T, class A>
struct RecordOfImpl<std::vector<T, A>> {
  using type = std::vector<typename RecordOfImpl<T>::type>;
};
template <class T, size_t N>
struct RecordOfImpl<std::array<T, N>> {
  using type = std::array<typename RecordOfImpl<T>::type, N>;
};
template <class T>
struct RecordOfImpl<std::optional<T>> {
  using type = std::optional<typename RecordOfImpl<T>::type>;
};
template <class... Ts>
struct RecordOfImpl<std::variant<Ts...>> {
  using type = std::variant<typename RecordOfImpl<Ts>::type...>;
};
template <class... Ts>
struct RecordOfImpl<std::tuple<Ts...>> {
  using type = std::tuple<typename RecordOfImpl<Ts>::type...>;
};
template <class A, class B>
struct RecordOfImpl<std::pair<A, B>> {
  using type =
      std::pair<typename RecordOfImpl<A>::type, typename RecordOfImpl<B>::type>;
};

}  // namespace module_internal

// RecordOf<T>: the record type of a field of type T.
template <class T>
using RecordOf =
    typename module_internal::RecordOfImpl<std::remove_cv_t<T>>::type;

template <class Field>
[[nodiscard]] RecordOf<Field> IntoRecord(const Field& field);

namespace module_internal {

// Stores the record of the variant's active alternative at the same index
// (alternatives may share a record type, so the index is what identifies it).
template <size_t I, class Variant, class RecordVariant>
void IntoRecordAlternative(const Variant& field, RecordVariant& record) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (field.index() == I) {
      record.template emplace<I>(IntoRecord(std::get<I>(field)));
    } else {
      IntoRecordAlternative<I + 1>(field, record);
    }
  }
}

}  // namespace module_internal

// IntoRecord() returns the record of `field` (a module, usually). It reads
// every parameter through its save mapper, so lazy parameters initialize.
template <class Field>
RecordOf<Field> IntoRecord(const Field& field) {
  using module_internal::BufferField;
  using module_internal::IsArrayType;
  using module_internal::IsVectorType;
  using module_internal::OptionalField;
  using module_internal::ParamField;
  using module_internal::TupleField;
  using module_internal::VariantField;
  RecordOf<Field> record{};
  if constexpr (ParamField<Field>) {
    record.id = field.id();
    record.value = field.value_for_save();
  } else if constexpr (BufferField<Field>) {
    record.id = field.id();
    record.value = field.value();
  } else if constexpr (Module<Field>) {
    ForEachFieldWithRecord(
        field, record,
        [](const char*, const auto& member, auto& member_record) {
          member_record = IntoRecord(member);
        });
  } else if constexpr (IsVectorType<Field>::value) {
    record.reserve(field.size());
    for (const auto& element : field) record.push_back(IntoRecord(element));
  } else if constexpr (IsArrayType<Field>::value) {
    for (size_t i = 0; i < field.size(); ++i) record[i] = IntoRecord(field[i]);
  } else if constexpr (OptionalField<Field>) {
    if (field.has_value()) record = IntoRecord(*field);
  } else if constexpr (VariantField<Field>) {
    module_internal::IntoRecordAlternative<0>(field, record);
  } else if constexpr (TupleField<Field>) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(record) = IntoRecord(std::get<I>(field))), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<Field>>());
  } else {
    module_internal::RequireConstantField<Field>();
  }
  return record;
}

namespace module_internal {

// Formats a shape as "[2, 3]" whether or not it has its own operator<<.
template <class Shape>
std::string FormatShape(const Shape& shape) {
  std::ostringstream out;
  if constexpr (requires { out << shape; }) {
    out << shape;
  } else {
    out << "[";
    bool first = true;
    for (const auto& dim : shape) {
      out << (first ? "" : ", ") << dim;
      first = false;
    }
    out << "]";
  }
  return out.str();
}

template <class Field>
void LoadInto(Field& field, const RecordOf<Field>& record, ParamPath& path,
              std::vector<std::string>& errors);

// OnDeviceOf() is `value` on the device `leaf` (a Param or Buffer) lives or
// will live on: a CPU record loaded into a module on cuda:N puts each value
// on its parameter's device (before the load mapper runs), never a CPU
// tensor inside a CUDA module. Values of types without devices pass as is.
template <class Leaf, class T>
T OnDeviceOf(const Leaf& leaf, const T& value) {
  if constexpr (requires {
                  {
                    value.device() == leaf.lazy_device()
                    } -> std::same_as<bool>;
                  { value.to_device(leaf.lazy_device()) } -> std::same_as<T>;
                }) {
    const auto device = leaf.lazy_device();
    if (!(value.device() == device)) return value.to_device(device);
  }
  return value;
}

// Loads the active alternative (same index in the module and the record).
template <size_t I, class Variant, class RecordVariant>
void LoadAlternative(Variant& field, const RecordVariant& record,
                     ParamPath& path, std::vector<std::string>& errors) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (field.index() == I) {
      LoadInto(std::get<I>(field), std::get<I>(record), path, errors);
    } else {
      LoadAlternative<I + 1>(field, record, path, errors);
    }
  }
}

// Loads element I of a tuple or pair, under the path component "I".
template <size_t I, class Tuple, class RecordTuple>
void LoadElement(Tuple& field, const RecordTuple& record, ParamPath& path,
                 std::vector<std::string>& errors) {
  ScopedPathComponent component(path, I);
  LoadInto(std::get<I>(field), std::get<I>(record), path, errors);
}

// Loads `record` into `field` (a copy the caller owns), appending one message
// per problem to `errors`.
template <class Field>
void LoadInto(Field& field, const RecordOf<Field>& record, ParamPath& path,
              std::vector<std::string>& errors) {
  if constexpr (ParamField<Field> || BufferField<Field>) {
    if (!record.value.has_value()) {
      errors.push_back(absl::StrFormat("%s: missing from the record",
                                       std::string(path.view())));
      return;
    }
    const auto expected = field.lazy_shape();
    const auto actual = record.value->shape();
    if (!(actual == expected)) {
      errors.push_back(absl::StrFormat(
          "%s: shape mismatch: the record has %s, the module expects %s",
          std::string(path.view()), FormatShape(actual),
          FormatShape(expected)));
      return;
    }
    auto value = OnDeviceOf(field, *record.value);
    if constexpr (ParamField<Field>) {
      field = field.load(std::move(value)).with_id(record.id);
    } else {
      field = field.with_value(std::move(value), record.id);
    }
  } else if constexpr (Module<Field>) {
    ForEachFieldWithRecord(
        field, record,
        [&](const char* name, auto& member, const auto& member_record) {
          ScopedPathComponent component(path, std::string_view(name));
          LoadInto(member, member_record, path, errors);
        });
  } else if constexpr (SequenceField<Field>) {
    if (record.size() != field.size()) {
      errors.push_back(absl::StrFormat(
          "%s: the record has %d entries, the module has %d",
          std::string(path.view()), record.size(), field.size()));
      return;
    }
    for (size_t i = 0; i < field.size(); ++i) {
      ScopedPathComponent component(path, i);
      LoadInto(field[i], record[i], path, errors);
    }
  } else if constexpr (OptionalField<Field>) {
    if (field.has_value() != record.has_value()) {
      errors.push_back(absl::StrFormat(
          "%s: the record %s this optional submodule, the module %s it",
          std::string(path.view()), record.has_value() ? "has" : "lacks",
          field.has_value() ? "has" : "lacks"));
      return;
    }
    if (field.has_value()) LoadInto(*field, *record, path, errors);
  } else if constexpr (VariantField<Field>) {
    if (field.index() != record.index()) {
      errors.push_back(absl::StrFormat(
          "%s: the record holds variant alternative %d, the module %d",
          std::string(path.view()), record.index(), field.index()));
      return;
    }
    LoadAlternative<0>(field, record, path, errors);
  } else if constexpr (TupleField<Field>) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      (LoadElement<I>(field, record, path, errors), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<Field>>());
  } else {
    RequireConstantField<Field>();
  }
}

}  // namespace module_internal

// LoadRecord() loads `record` into `module`: every parameter takes the
// record's value (through its load mapper) and id. On any problem it returns
// InvalidArgument listing each one with its path, and `module` is unchanged.
template <Module M>
[[nodiscard]] absl::Status LoadRecord(M& module, const RecordOf<M>& record) {
  M loaded = module;
  ParamPath path;
  std::vector<std::string> errors;
  module_internal::LoadInto(loaded, record, path, errors);
  if (!errors.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot load %s record (%d problems): %s", ModuleTraits<M>::kTypeName,
        errors.size(), absl::StrJoin(errors, "; ")));
  }
  module = std::move(loaded);
  return absl::OkStatus();
}

}  // namespace kindling

#endif  // KINDLING_MODULE_RECORD_H_
