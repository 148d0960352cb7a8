// The modules kindling-gen found in a header, as plain data.
//
// Collection (module_collector.h) reads the AST and fills these structs;
// emission (module_emitter.h) turns them into the text of
// `<header>.kindling.h`. Keeping clang types out of the model keeps the emitter
// independent of the AST and easy to test.
#ifndef KINDLING_CODEGEN_MODULE_MODEL_H_
#define KINDLING_CODEGEN_MODULE_MODEL_H_

#include <string>
#include <vector>

namespace kindling::codegen {

// Namespace: one enclosing namespace of a module, outermost first. An empty
// name is an anonymous namespace.
struct Namespace {
  std::string name;
  bool is_inline = false;
};

// TemplateParameter: one parameter of a module class template, spelled twice:
// as declared in a template parameter list ("class T", "int N", "class... Ts")
// and as used in a template argument list ("T", "N", "Ts...").
struct TemplateParameter {
  std::string declaration;
  std::string argument;
};

// Field: a field that goes into the generated traits, in declaration order.
// `type` is the field's type fully qualified, as the record spells it.
struct Field {
  std::string name;
  std::string type;
  // The field's name in paths, records and checkpoints: `name`, or its
  // KINDLING_KEY.
  std::string key;
};

// Module: one struct or class template marked KINDLING_MODULE.
struct Module {
  // The unqualified name ("Mlp") and the qualified name without template
  // arguments ("demo::Mlp"), which is also ModuleTraits::kTypeName.
  std::string name;
  std::string qualified_name;
  std::vector<Namespace> namespaces;
  // The classes a nested module is declared in, outermost first ("Transformer"
  // for demo::Transformer::Block); empty at namespace scope.
  std::vector<std::string> enclosing_classes;
  // Empty unless the module is a class template.
  std::vector<TemplateParameter> template_parameters;
  // Fields that can hold parameters: leaves, submodules, containers of them,
  // and (in templates) fields of dependent type.
  std::vector<Field> parametric_fields;
  // Fields that hold no parameters: kept and copied, never saved.
  std::vector<Field> constants;
};

// RecordName: the generated record of `module`, declared in the module's
// namespace: "<Name>Record", and for a nested module the enclosing classes
// first, joined by '_' ("Transformer_BlockRecord" for
// demo::Transformer::Block). A record cannot be declared inside the user's
// class, and the underscore keeps it apart from a namespace-scope
// "TransformerBlock" module.
inline std::string RecordName(const Module& module) {
  std::string name;
  for (const std::string& enclosing : module.enclosing_classes) {
    name += enclosing + "_";
  }
  return name + module.name + "Record";
}

// GeneratedHeader: everything the emitter needs for one output file.
struct GeneratedHeader {
  // The header as given to kindling-gen, named in the generated comment.
  std::string source_path;
  // How the generated file includes the header ("examples/mlp.h").
  std::string include_path;
  // The generated files of other headers whose modules these modules hold,
  // as included ("kindling/nn/linear.kindling.h").
  std::vector<std::string> submodule_includes;
  std::vector<Module> modules;
};

// GeneratedPath: the generated file for a header, as a path or an include:
// "examples/mlp.h" -> "examples/mlp.kindling.h".
inline std::string GeneratedPath(std::string header_path) {
  for (const std::string extension : {".h", ".hh", ".hpp", ".hxx"}) {
    if (header_path.size() > extension.size() &&
        header_path.compare(header_path.size() - extension.size(),
                            extension.size(), extension) == 0) {
      header_path.resize(header_path.size() - extension.size());
      break;
    }
  }
  return header_path + ".kindling.h";
}

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_MODULE_MODEL_H_
