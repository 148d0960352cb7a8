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
//     // Calls fn(name, field) for each field that can hold parameters, in
//     // declaration order. `Self` is the module type, const or not.
//     template <class Self, class Fn>
//     static void ForEachField(Self& module, Fn&& fn) {
//       fn("fc1", module.fc1);
//       fn("hidden", module.hidden);
//     }
//
//     // The same fields, each with its member of the record.
//     template <class Self, class RecordSelf, class Fn>
//     static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
//                                        Fn&& fn) {
//       fn("fc1", module.fc1, record.fc1);
//       fn("hidden", module.hidden, record.hidden);
//     }
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
// A hand-written specialization of the same shape works too (the benchmarks
// compare one against the generated code).
#ifndef KINDLING_MODULE_MODULE_TRAITS_H_
#define KINDLING_MODULE_MODULE_TRAITS_H_

#include <string>
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
