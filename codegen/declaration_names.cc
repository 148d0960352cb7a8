#include "codegen/declaration_names.h"

#include <string>

#include "clang/AST/QualTypeNames.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/raw_ostream.h"

namespace kindling::codegen {

DeclarationNames::DeclarationNames(clang::ASTContext& context)
    : context_(context), policy_(context.getLangOpts()) {
  policy_.SuppressUnwrittenScope = true;
  policy_.SuppressInlineNamespace = true;
  policy_.AnonymousTagLocations = false;
  policy_.FullyQualifiedName = true;
}

std::string DeclarationNames::QualifiedName(
    const clang::NamedDecl* decl) const {
  std::string name;
  llvm::raw_string_ostream out(name);
  decl->printQualifiedName(out, policy_);
  return name;
}

std::string DeclarationNames::FullyQualifiedType(clang::QualType type) const {
  return clang::TypeName::getFullyQualifiedName(type, context_, policy_);
}

std::string DeclarationNames::FieldTypeName(const clang::CXXRecordDecl* record,
                                            clang::QualType type) const {
  if (type->isDependentType()) {
    if (const clang::ClassTemplateDecl* class_template =
            record->getDescribedClassTemplate()) {
      for (const clang::NamedDecl* parameter :
           *class_template->getTemplateParameters()) {
        if (llvm::isa<clang::TemplateTemplateParmDecl>(parameter)) {
          return type.getAsString(context_.getPrintingPolicy());
        }
      }
    }
  }
  return FullyQualifiedType(type);
}

std::vector<TemplateParameter> DeclarationNames::TemplateParameters(
    const clang::TemplateParameterList& parameters) const {
  std::vector<TemplateParameter> result;
  for (unsigned index = 0; index < parameters.size(); ++index) {
    const clang::NamedDecl* parameter = parameters.getParam(index);
    std::string name = parameter->getNameAsString();
    // An unnamed parameter still needs a name in the specialization.
    if (name.empty()) name = "Parameter" + std::to_string(index);
    const std::string pack = parameter->isParameterPack() ? "..." : "";
    result.push_back(
        {TemplateParameterDeclaration(parameter) + pack + " " + name,
         name + pack});
  }
  return result;
}

// The declaration of a template parameter up to its name: "class",
// "std::copyable", "std::size_t", "template <class...> class".
std::string DeclarationNames::TemplateParameterDeclaration(
    const clang::NamedDecl* parameter) const {
  std::string declaration;
  llvm::raw_string_ostream out(declaration);
  if (const auto* type_parameter =
          llvm::dyn_cast<clang::TemplateTypeParmDecl>(parameter)) {
    if (const clang::TypeConstraint* constraint =
            type_parameter->getTypeConstraint()) {
      out << QualifiedName(constraint->getNamedConcept());
      if (const auto* arguments = constraint->getTemplateArgsAsWritten()) {
        clang::printTemplateArgumentList(out, arguments->arguments(), policy_);
      }
    } else {
      out << (type_parameter->wasDeclaredWithTypename() ? "typename" : "class");
    }
  } else if (const auto* value_parameter =
                 llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(parameter)) {
    clang::QualType type = value_parameter->getType();
    if (parameter->isParameterPack()) {
      if (const auto* expansion = type->getAs<clang::PackExpansionType>()) {
        type = expansion->getPattern();
      }
    }
    out << FullyQualifiedType(type);
  } else {
    // A template template parameter: its source text up to the name.
    out << clang::Lexer::getSourceText(
               clang::CharSourceRange::getCharRange(parameter->getBeginLoc(),
                                                    parameter->getLocation()),
               context_.getSourceManager(), context_.getLangOpts())
               .rtrim()
               .rtrim('.')
               .rtrim();
  }
  return declaration;
}

std::vector<Namespace> DeclarationNames::EnclosingNamespaces(
    const clang::CXXRecordDecl* record) {
  std::vector<Namespace> namespaces;
  for (const clang::DeclContext* scope = record->getDeclContext();
       scope != nullptr; scope = scope->getParent()) {
    if (const auto* space = llvm::dyn_cast<clang::NamespaceDecl>(scope)) {
      namespaces.insert(namespaces.begin(),
                        {space->getNameAsString(), space->isInline()});
    }
  }
  return namespaces;
}

clang::QualType DeclarationNames::AsWritten(clang::QualType written,
                                            clang::QualType canonical) const {
  if (const auto* specialization =
          written->getAs<clang::TemplateSpecializationType>()) {
    for (const clang::TemplateArgument& argument :
         specialization->template_arguments()) {
      if (argument.getKind() == clang::TemplateArgument::Type &&
          context_.hasSameType(argument.getAsType(), canonical)) {
        return argument.getAsType();
      }
    }
  }
  return canonical;
}

}  // namespace kindling::codegen
