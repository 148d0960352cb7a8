// ModuleTraits<M>: the per-module facts kindling-gen writes, and the Module
// concept built on them.
//
// For every struct marked KINDLING_MODULE, the generated `<header>.kindling.h`
// specializes ModuleTraits with the module's fields and defines its record
// type. Everything else (visiting, mapping, records, device moves, printing)
// is generic code in runtime/module that walks these fields, so what the
// generator writes stays short enough to read:
//
//   namespace demo {
//   // MlpRecord: the saved state of demo::Mlp, one member per field that
//   // holds parameters.
//   struct MlpRecord {
//     kindling::RecordOf<kindling::nn::Linear> fc1;
//     kindling::RecordOf<std::vector<kindling::nn::Linear>> hidden;
//   };
//   }  // namespace demo
//
//   namespace kindling {
//   template <>
//   struct ModuleTraits<::demo::Mlp> {
//     static constexpr bool kIsModule = true;
//     static constexpr const char* kTypeName = "demo::Mlp";
//     using Record = ::demo::MlpRecord;
//
//     // (A module template's kTypeName carries its arguments, built once:
//     //   static inline const std::string kTypeName =
//     //       kindling::TemplateTypeName("demo::Tower",
//     //           {kindling::TemplateArgumentName<N>()});
//     // so a Tower<3> is "demo::Tower<3>" in checkpoints and messages.)
//
//     // The fields that can hold parameters, in declaration order: each
//     // field's name, its member and its record's member. ForEachField()
//     // and ForEachFieldWithRecord() (below) walk this one table.
//     static constexpr auto kFields = std::make_tuple(
//         kindling::FieldOf("fc1", &::demo::Mlp::fc1, &::demo::MlpRecord::fc1),
//         kindling::FieldOf("hidden", &::demo::Mlp::hidden,
//                           &::demo::MlpRecord::hidden));
//
//     // Constants: kept, copied and printed, never saved. Written only
//     // for a module that has some (read through ForEachConstant()).
//     template <class Fn>
//     static void ForEachConstant(const ::demo::Mlp& module, Fn&& fn) {
//       fn("num_classes", module.num_classes);
//     }
//   };
//   }  // namespace kindling
//
// Order matters: a record's members name RecordOf<Submodule>, which needs the
// submodule's ModuleTraits specialization complete. So a generated file
// includes the `.kindling.h` of each header that defines a submodule type,
// then emits each module's record followed by its traits, a module before
// any module of the same header that holds it.
//
// A hand-written specialization works too (the benchmarks compare one against
// the generated code): instead of kFields it may define the two walks itself,
//   template <class Self, class Fn>
//   static void ForEachField(Self& module, Fn&& fn);  // fn(name, field)
//   template <class Self, class RecordSelf, class Fn>
//   static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
//                                      Fn&& fn);  // fn(name, field, record)
#ifndef KINDLING_MODULE_MODULE_TRAITS_H_
#define KINDLING_MODULE_MODULE_TRAITS_H_

#include <string>
#include <tuple>
#include <type_traits>

#include "kindling/module/annotations.h"
#include "kindling/module/type_name.h"

namespace kindling {

// ModuleTraits<M>: specialized by generated code; the primary template says
// "not a module".
template <class M>
struct ModuleTraits {
  static constexpr bool kIsModule = false;
};

// Module: a type with generated (or hand-written) ModuleTraits.
template <class M>
concept Module = ModuleTraits<std::remove_cvref_t<M>>::kIsModule;

// TemplateArgumentName<T>(): a type argument of a module template's
// kTypeName (type_name.h has the value and template overloads): a module by
// its own kTypeName, any other type as the compiler names it.
template <class T>
std::string TemplateArgumentName() {
  if constexpr (ModuleTraits<T>::kIsModule) {
    return std::string(ModuleTraits<T>::kTypeName);
  } else {
    return std::string(module_internal::CompilerTypeName<T>());
  }
}

// FieldEntry: one row of ModuleTraits::kFields.
template <class M, class T, class R, class RecordT>
struct FieldEntry {
  const char* name;
  T M::*member;
  RecordT R::*record_member;
};

// FieldOf() is the FieldEntry of a field and its record's member.
template <class M, class T, class R, class RecordT>
constexpr FieldEntry<M, T, R, RecordT> FieldOf(const char* name, T M::*member,
                                               RecordT R::*record_member) {
  return {name, member, record_member};
}

// ForEachField() calls fn(name, field) for each field of `module` that can
// hold parameters, in declaration order; `Self` is the module type, const or
// not.
template <class Self, class Fn>
void ForEachField(Self& module, Fn&& fn) {
  using Traits = ModuleTraits<std::remove_cvref_t<Self>>;
  if constexpr (requires { Traits::kFields; }) {
    std::apply(
        [&](const auto&... field) {
          (fn(field.name, module.*field.member), ...);
        },
        Traits::kFields);
  } else {
    Traits::ForEachField(module, fn);
  }
}

// ForEachFieldWithRecord() calls fn(name, field, field's record member).
template <class Self, class RecordSelf, class Fn>
void ForEachFieldWithRecord(Self& module, RecordSelf& record, Fn&& fn) {
  using Traits = ModuleTraits<std::remove_cvref_t<Self>>;
  if constexpr (requires { Traits::kFields; }) {
    std::apply(
        [&](const auto&... field) {
          (fn(field.name, module.*field.member, record.*field.record_member),
           ...);
        },
        Traits::kFields);
  } else {
    Traits::ForEachFieldWithRecord(module, record, fn);
  }
}

// ForEachConstant() calls ModuleTraits<M>::ForEachConstant(module, fn) when
// the module has constants; the generator writes that member only then.
template <Module M, class Fn>
void ForEachConstant(const M& module, Fn&& fn) {
  using Traits = ModuleTraits<std::remove_cvref_t<M>>;
  if constexpr (requires { Traits::ForEachConstant(module, fn); }) {
    Traits::ForEachConstant(module, fn);
  }
}

}  // namespace kindling

#endif  // KINDLING_MODULE_MODULE_TRAITS_H_
