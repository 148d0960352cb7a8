#include "codegen/submodule_traits.h"

#include "clang/AST/DeclTemplate.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/HeaderSearch.h"
#include "codegen/module_model.h"
#include "llvm/ADT/STLExtras.h"

namespace kindling::codegen {
namespace {

// kindling::ModuleTraits, if the parsed header declares it.
const clang::ClassTemplateDecl* ModuleTraitsTemplate(
    clang::ASTContext& context) {
  clang::IdentifierTable& identifiers = context.Idents;
  for (const clang::NamedDecl* space :
       context.getTranslationUnitDecl()->lookup(&identifiers.get("kindling"))) {
    const auto* kindling = llvm::dyn_cast<clang::NamespaceDecl>(space);
    if (kindling == nullptr) continue;
    for (const clang::NamedDecl* traits :
         kindling->lookup(&identifiers.get("ModuleTraits"))) {
      if (const auto* found =
              llvm::dyn_cast<clang::ClassTemplateDecl>(traits)) {
        return found;
      }
    }
  }
  return nullptr;
}

bool HasExplicitSpecialization(clang::ASTContext& context,
                               const clang::ClassTemplateDecl* traits,
                               clang::QualType type) {
  for (const clang::ClassTemplateSpecializationDecl* existing :
       traits->specializations()) {
    const clang::TemplateArgumentList& arguments = existing->getTemplateArgs();
    if (existing->getSpecializationKind() ==
            clang::TSK_ExplicitSpecialization &&
        arguments.size() == 1 &&
        arguments[0].getKind() == clang::TemplateArgument::Type &&
        context.hasSameType(arguments[0].getAsType(), type)) {
      return true;
    }
  }
  return false;
}

// Whether a partial specialization of `traits` has the pattern
// `ModuleTraits<Template<...>>` for the template `specialization` belongs to.
bool HasPartialSpecialization(
    const clang::ClassTemplateDecl* traits,
    const clang::ClassTemplateSpecializationDecl* specialization) {
  llvm::SmallVector<clang::ClassTemplatePartialSpecializationDecl*, 4> partials;
  const_cast<clang::ClassTemplateDecl*>(traits)->getPartialSpecializations(
      partials);
  const clang::Decl* wanted =
      specialization->getSpecializedTemplate()->getCanonicalDecl();
  for (const clang::ClassTemplatePartialSpecializationDecl* partial :
       partials) {
    const clang::TemplateArgumentList& arguments = partial->getTemplateArgs();
    if (arguments.size() != 1 ||
        arguments[0].getKind() != clang::TemplateArgument::Type) {
      continue;
    }
    const auto* pattern =
        arguments[0].getAsType()->getAs<clang::TemplateSpecializationType>();
    if (pattern == nullptr) continue;
    const clang::TemplateDecl* pattern_template =
        pattern->getTemplateName().getAsTemplateDecl();
    if (pattern_template != nullptr &&
        pattern_template->getCanonicalDecl() == wanted) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool HasVisibleModuleTraits(clang::ASTContext& context,
                            const clang::CXXRecordDecl* module) {
  const clang::ClassTemplateDecl* traits = ModuleTraitsTemplate(context);
  if (traits == nullptr) return false;
  if (HasExplicitSpecialization(context, traits,
                                context.getRecordType(module))) {
    return true;
  }
  const auto* specialization =
      llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(module);
  return specialization != nullptr &&
         HasPartialSpecialization(traits, specialization);
}

SubmoduleTraitsSource SubmoduleTraits::Find(
    const clang::CXXRecordDecl* submodule) {
  SubmoduleTraitsSource source;
  source.declaration = submodule;
  if (const auto* specialization =
          llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(submodule)) {
    source.declaration =
        specialization->getSpecializedTemplate()->getTemplatedDecl();
  }
  const clang::SourceManager& source_manager = context_.getSourceManager();
  const clang::SourceLocation location =
      source_manager.getExpansionLoc(source.declaration->getLocation());
  if (source_manager.isWrittenInMainFile(location) ||
      !looked_up_.insert(source.declaration->getCanonicalDecl()).second ||
      HasVisibleModuleTraits(context_, submodule)) {
    return source;
  }
  const clang::FileEntry* file =
      source_manager.getFileEntryForID(source_manager.getFileID(location));
  if (file == nullptr) return source;
  source.generated_include = GeneratedPath(
      preprocessor_.getHeaderSearchInfo().suggestPathToFileForDiagnostics(file,
                                                                          ""));
  source.kind =
      llvm::is_contained(sibling_includes_, source.generated_include) ||
              IsOnIncludePath(source.generated_include, location)
          ? SubmoduleTraitsSource::Kind::kInclude
          : SubmoduleTraitsSource::Kind::kMissing;
  return source;
}

bool SubmoduleTraits::IsOnIncludePath(const std::string& generated,
                                      clang::SourceLocation location) const {
  const clang::DirectoryLookup* directory = nullptr;
  // Searched as `#include "..."` from the include path (the preprocessor's
  // own lookup needs a file being lexed, and parsing is over).
  return preprocessor_.getHeaderSearchInfo()
      .LookupFile(generated, location, /*isAngled=*/false, /*FromDir=*/nullptr,
                  &directory, /*Includers=*/{}, /*SearchPath=*/nullptr,
                  /*RelativePath=*/nullptr, /*RequestingModule=*/nullptr,
                  /*SuggestedModule=*/nullptr, /*IsMapped=*/nullptr,
                  /*IsFrameworkFound=*/nullptr)
      .hasValue();
}

}  // namespace kindling::codegen
