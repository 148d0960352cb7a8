// The names a module template's ModuleTraits::kTypeName is built from: one
// spelling per template argument, so a Tower<3> checkpoint says
// "demo::Tower<3>" and a printed Chain<std::vector, float> says so.
//
//   TemplateTypeName("demo::Tower", {TemplateArgumentName<3>()})
//       == "demo::Tower<3>"
//
// A module argument is spelled by its own kTypeName (module_traits.h adds
// that overload), an integer or bool by its value, and any other type, value
// or template as the compiler names it (__PRETTY_FUNCTION__, the same text
// in GCC and Clang for the types a model uses: "float",
// "kindling::Tensor<2>", "std::vector").
#ifndef KINDLING_MODULE_TYPE_NAME_H_
#define KINDLING_MODULE_TYPE_NAME_H_

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace kindling {
namespace module_internal {

// ArgumentFromSignature(): the text after "<parameter> = " in a function
// template's __PRETTY_FUNCTION__ ("... [with T = float; ...]" in GCC,
// "... [T = float]" in Clang).
inline std::string_view ArgumentFromSignature(std::string_view signature,
                                              std::string_view parameter) {
  const size_t bracket = signature.find('[');
  if (bracket == std::string_view::npos) return signature;
  const std::string marker = std::string(parameter) + " = ";
  size_t start = signature.find(marker, bracket);
  if (start == std::string_view::npos) return signature;
  start += marker.size();
  size_t end = signature.find(';', start);
  if (end == std::string_view::npos) end = signature.rfind(']');
  return signature.substr(start, end - start);
}

template <class KindlingArgument>
std::string_view CompilerTypeName() {
  return ArgumentFromSignature(__PRETTY_FUNCTION__, "KindlingArgument");
}

template <auto KindlingArgument>
std::string_view CompilerValueName() {
  return ArgumentFromSignature(__PRETTY_FUNCTION__, "KindlingArgument");
}

template <template <class...> class KindlingArgument>
std::string_view CompilerTemplateName() {
  return ArgumentFromSignature(__PRETTY_FUNCTION__, "KindlingArgument");
}

}  // namespace module_internal

// TemplateArgumentName<V>(): a value argument; integers and bools by value.
template <auto V>
std::string TemplateArgumentName() {
  if constexpr (std::is_same_v<decltype(V), bool>) {
    return V ? "true" : "false";
  } else if constexpr (std::is_integral_v<decltype(V)>) {
    return std::to_string(V);
  } else {
    return std::string(module_internal::CompilerValueName<V>());
  }
}

// TemplateArgumentName<Template>(): a template template argument.
template <template <class...> class Template>
std::string TemplateArgumentName() {
  return std::string(module_internal::CompilerTemplateName<Template>());
}

// TemplateTypeName(): `name` followed by its arguments in angle brackets.
inline std::string TemplateTypeName(
    std::string_view name, std::initializer_list<std::string> arguments) {
  std::string text(name);
  text += '<';
  bool first = true;
  for (const std::string& argument : arguments) {
    if (!first) text += ", ";
    text += argument;
    first = false;
  }
  text += '>';
  return text;
}

}  // namespace kindling

#endif  // KINDLING_MODULE_TYPE_NAME_H_
