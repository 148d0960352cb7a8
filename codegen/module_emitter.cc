#include "codegen/module_emitter.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "clang/Format/Format.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/raw_ostream.h"

namespace kindling::codegen {
namespace {

// The root .clang-format, read at build time (codegen:project_style).
constexpr char kProjectStyle[] =
#include "codegen/project_style.inc"
    ;

// ProjectStyle() is the style of the root .clang-format, so generated
// headers read like the code around them and pass the formatting check.
const clang::format::FormatStyle& ProjectStyle() {
  static const clang::format::FormatStyle* const style = [] {
    auto* parsed = new clang::format::FormatStyle(
        clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp));
    if (const std::error_code error =
            clang::format::parseConfiguration(kProjectStyle, parsed)) {
      // The file is Kindling's own and is tested; this is a build defect.
      llvm::report_fatal_error(llvm::Twine("kindling-gen: .clang-format: ") +
                               error.message());
    }
    return parsed;
  }();
  return *style;
}

std::string Format(const std::string& code, llvm::StringRef file_name) {
  const std::vector<clang::tooling::Range> ranges = {
      clang::tooling::Range(0, code.size())};
  const clang::tooling::Replacements replacements =
      clang::format::reformat(ProjectStyle(), code, ranges, file_name);
  llvm::Expected<std::string> formatted =
      clang::tooling::applyAllReplacements(code, replacements);
  if (!formatted) {
    // Unformatted code still compiles; formatting never fails on our text.
    llvm::consumeError(formatted.takeError());
    return code;
  }
  return *formatted;
}

std::string HeaderGuard(llvm::StringRef path) {
  std::string guard;
  for (const char c : path) {
    guard +=
        std::isalnum(static_cast<unsigned char>(c))
            ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
            : '_';
  }
  return guard + "_";
}

// Named, non-inline namespaces open as one `namespace a::b {`; anonymous or
// inline ones need a line each.
bool IsSimpleNesting(const std::vector<Namespace>& namespaces) {
  for (const Namespace& space : namespaces) {
    if (space.name.empty() || space.is_inline) return false;
  }
  return true;
}

std::string JoinedNames(const std::vector<Namespace>& namespaces) {
  std::string text;
  for (const Namespace& space : namespaces) {
    if (!text.empty()) text += "::";
    text += space.name;
  }
  return text;
}

std::string NamespaceOpen(const std::vector<Namespace>& namespaces) {
  if (namespaces.empty()) return "";
  if (IsSimpleNesting(namespaces)) {
    return "namespace " + JoinedNames(namespaces) + " {\n\n";
  }
  std::string text;
  for (const Namespace& space : namespaces) {
    text += space.is_inline ? "inline namespace " : "namespace ";
    if (!space.name.empty()) text += space.name + " ";
    text += "{\n";
  }
  return text + "\n";
}

std::string NamespaceClose(const std::vector<Namespace>& namespaces) {
  if (namespaces.empty()) return "";
  if (IsSimpleNesting(namespaces)) {
    return "}  // namespace " + JoinedNames(namespaces) + "\n\n";
  }
  std::string text;
  for (auto space = namespaces.rbegin(); space != namespaces.rend(); ++space) {
    text += space->name.empty() ? "}  // namespace\n"
                                : "}  // namespace " + space->name + "\n";
  }
  return text + "\n";
}

std::string TemplateHead(const Module& module) {
  std::string text = "template <";
  for (size_t i = 0; i < module.template_parameters.size(); ++i) {
    if (i > 0) text += ", ";
    text += module.template_parameters[i].declaration;
  }
  return text + ">\n";
}

std::string TemplateArguments(const Module& module) {
  if (module.template_parameters.empty()) return "";
  std::string text = "<";
  for (size_t i = 0; i < module.template_parameters.size(); ++i) {
    if (i > 0) text += ", ";
    text += module.template_parameters[i].argument;
  }
  return text + ">";
}

// "::demo::Block<T, N>": the module type as named from namespace kindling.
std::string ModuleType(const Module& module) {
  return "::" + module.qualified_name + TemplateArguments(module);
}

// "::demo::Transformer_BlockRecord": the record, in the module's namespace
// (outside any class the module is nested in).
std::string RecordType(const Module& module) {
  size_t nested_name_size = module.name.size();
  for (const std::string& enclosing : module.enclosing_classes) {
    nested_name_size += enclosing.size() + 2;  // "Name::"
  }
  std::string scope = module.qualified_name;
  scope.resize(scope.size() - nested_name_size);
  return "::" + scope + RecordName(module) + TemplateArguments(module);
}

void EmitRecord(const Module& module, llvm::raw_ostream& out) {
  out << "// " << RecordName(module) << ": the saved state of "
      << module.qualified_name << ", one member per field that holds "
      << "parameters.\n";
  if (!module.template_parameters.empty()) out << TemplateHead(module);
  out << "struct " << RecordName(module) << " {\n";
  for (const Field& field : module.parametric_fields) {
    out << "  kindling::RecordOf<" << field.type << "> " << field.name << ";\n";
  }
  out << "};\n\n";
}

// kTypeName: the qualified name, and for a template its arguments as
// instantiated ("demo::Tower<3>"), built once at run time (type_name.h).
void EmitTypeName(const Module& module, llvm::raw_ostream& out) {
  if (module.template_parameters.empty()) {
    out << "  static constexpr const char* kTypeName = \""
        << module.qualified_name << "\";\n";
    return;
  }
  out << "  static inline const std::string kTypeName = "
         "::kindling::TemplateTypeName(\""
      << module.qualified_name << "\", {";
  for (size_t i = 0; i < module.template_parameters.size(); ++i) {
    std::string argument = module.template_parameters[i].argument;
    std::string pack;
    if (argument.size() > 3 &&
        argument.compare(argument.size() - 3, 3, "...") == 0) {
      argument.resize(argument.size() - 3);
      pack = "...";
    }
    out << (i > 0 ? ", " : "") << "::kindling::TemplateArgumentName<"
        << argument << ">()" << pack;
  }
  out << "});\n";
}

void EmitTraits(const Module& module, llvm::raw_ostream& out) {
  if (module.template_parameters.empty()) {
    out << "template <>\n";
  } else {
    out << TemplateHead(module);
  }
  out << "struct ModuleTraits<" << ModuleType(module) << "> {\n"
      << "  static constexpr bool kIsModule = true;\n";
  EmitTypeName(module, out);
  out << "  using Record = " << RecordType(module) << ";\n\n";

  // One table of the fields that can hold parameters; module_traits.h's
  // ForEachField() and ForEachFieldWithRecord() walk it.
  out << "  static constexpr auto kFields = std::make_tuple(";
  for (size_t i = 0; i < module.parametric_fields.size(); ++i) {
    const Field& field = module.parametric_fields[i];
    out << (i > 0 ? ", " : "") << "::kindling::FieldOf(\"" << field.key
        << "\", &" << ModuleType(module) << "::" << field.name << ", &"
        << RecordType(module) << "::" << field.name << ")";
  }
  out << ");\n";

  // No constants, no member: ForEachConstant() (module_traits.h) then
  // visits nothing.
  if (!module.constants.empty()) {
    out << "\n  template <class Fn>\n";
    out << "  static void ForEachConstant(const " << ModuleType(module)
        << "& module, Fn&& fn) {\n";
    for (const Field& field : module.constants) {
      out << "    fn(\"" << field.key << "\", module." << field.name << ");\n";
    }
    out << "  }\n";
  }
  out << "};\n\n";
}

// One module: its record in its namespace, then its traits. Records name the
// records of their submodules through ModuleTraits, so each module's traits
// must come before any later module that holds it.
void EmitModule(const Module& module, llvm::raw_ostream& out) {
  out << NamespaceOpen(module.namespaces);
  EmitRecord(module, out);
  out << NamespaceClose(module.namespaces);
  out << "namespace kindling {\n\n";
  EmitTraits(module, out);
  out << "}  // namespace kindling\n\n";
}

}  // namespace

std::string EmitHeader(const GeneratedHeader& header) {
  const std::string generated_path = GeneratedPath(header.include_path);
  const std::string guard = HeaderGuard(generated_path);
  std::string code;
  llvm::raw_string_ostream out(code);

  out << "// " << generated_path << ": generated by kindling-gen from "
      << header.source_path << ". Do not edit; the build regenerates it.\n";
  if (!header.modules.empty()) {
    out << "//\n// Module traits and records for";
    for (size_t i = 0; i < header.modules.size(); ++i) {
      out << (i == 0 ? " " : ", ") << header.modules[i].qualified_name;
    }
    out << ". kindling/module/module_traits.h describes each member.\n";
  }
  out << "#ifndef " << guard << "\n#define " << guard << "\n\n";

  std::vector<std::string> includes = {header.include_path,
                                       "kindling/module/module_traits.h",
                                       "kindling/module/record.h"};
  includes.insert(includes.end(), header.submodule_includes.begin(),
                  header.submodule_includes.end());
  std::sort(includes.begin(), includes.end());
  includes.erase(std::unique(includes.begin(), includes.end()), includes.end());
  for (const std::string& include : includes) {
    out << "#include \"" << include << "\"\n";
  }
  out << "\n";

  for (const Module& module : header.modules) EmitModule(module, out);
  out << "#endif  // " << guard << "\n";
  std::string formatted = Format(out.str(), generated_path);
  if (formatted.empty() || formatted.back() != '\n') formatted += '\n';
  return formatted;
}

}  // namespace kindling::codegen
