// DeclarationNames: how generated code spells the user's declarations and
// types.
//
// Generated code lives in other scopes than the module (namespace kindling,
// the module's namespace outside any enclosing class), so every name it
// writes is fully qualified, with inline and anonymous namespaces left out
// (they need no spelling) and template parameters reproduced as declared.
#ifndef KINDLING_CODEGEN_DECLARATION_NAMES_H_
#define KINDLING_CODEGEN_DECLARATION_NAMES_H_

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/Type.h"
#include "codegen/module_model.h"

namespace kindling::codegen {

class DeclarationNames {
 public:
  explicit DeclarationNames(clang::ASTContext& context);

  // QualifiedName: "demo::Transformer::Block" (no template arguments).
  std::string QualifiedName(const clang::NamedDecl* decl) const;

  // FullyQualifiedType: "std::vector<demo::Linear>".
  std::string FullyQualifiedType(clang::QualType type) const;

  // FieldTypeName: a field's type as the record spells it: fully qualified,
  // except for dependent types in templates with template template
  // parameters, which clang's qualifier would wrongly scope to an
  // instantiation. Those stay as written; the record sits in the module's
  // namespace, so they mean the same.
  std::string FieldTypeName(const clang::CXXRecordDecl* record,
                            clang::QualType type) const;

  // TemplateParameters: each parameter of a module class template, as
  // declared and as an argument.
  std::vector<TemplateParameter> TemplateParameters(
      const clang::TemplateParameterList& parameters) const;

  // EnclosingNamespaces: the namespaces around `record`, outermost first.
  static std::vector<Namespace> EnclosingNamespaces(
      const clang::CXXRecordDecl* record);

  // AsWritten: the template argument of `written` (as the user spelled it)
  // that is `canonical`, so a note says 'std::string', not
  // 'std::basic_string<char>'.
  clang::QualType AsWritten(clang::QualType written,
                            clang::QualType canonical) const;

 private:
  std::string TemplateParameterDeclaration(
      const clang::NamedDecl* parameter) const;

  clang::ASTContext& context_;
  clang::PrintingPolicy policy_;
};

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_DECLARATION_NAMES_H_
