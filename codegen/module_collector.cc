#include "codegen/module_collector.h"

#include <string>
#include <utility>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/QualTypeNames.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/HeaderSearch.h"
#include "clang/Lex/Lexer.h"
#include "codegen/field_classifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace kindling::codegen {
namespace {

constexpr llvm::StringRef kModuleAnnotation = "kindling::module";

// The diagnostics kindling-gen reports, registered once per run.
struct Diagnostics {
  explicit Diagnostics(clang::DiagnosticsEngine& engine) : engine(engine) {
    using Level = clang::DiagnosticsEngine::Level;
    // Custom warnings ignore -Werror and -w, so apply both here.
    const Level warning =
        engine.getWarningsAsErrors() ? Level::Error : Level::Warning;
    warnings_enabled = !engine.getIgnoreAllWarnings();
    duplicate_mark = engine.getCustomDiagID(
        Level::Error, "duplicate KINDLING_MODULE on '%0'");
    previous_mark =
        engine.getCustomDiagID(Level::Note, "first KINDLING_MODULE is here");
    union_module = engine.getCustomDiagID(
        Level::Error,
        "KINDLING_MODULE on union '%0'; modules must be structs or classes at "
        "namespace scope");
    nested_module = engine.getCustomDiagID(
        Level::Error,
        "KINDLING_MODULE on nested class '%0'; modules must be structs or "
        "classes at namespace scope");
    specialization_module = engine.getCustomDiagID(
        Level::Error,
        "KINDLING_MODULE on a specialization of '%0'; mark the primary "
        "template instead");
    record_name_taken = engine.getCustomDiagID(
        Level::Error,
        "'%0' is already declared; kindling-gen defines it as the record of "
        "module '%1'");
    declared_here =
        engine.getCustomDiagID(Level::Note, "'%0' is declared here");
    base_with_parameters = engine.getCustomDiagID(
        Level::Error,
        "base class %0 of module '%1' holds parameters; make it a field");
    unsupported_type = engine.getCustomDiagID(
        Level::Error,
        "field '%0' has unsupported type %1; its parameters cannot be visited "
        "or saved");
    hint_pointer = engine.getCustomDiagID(
        Level::Note, "hold it by value: a module owns its parameters");
    hint_smart_pointer = engine.getCustomDiagID(
        Level::Note,
        "hold it by value, or in std::optional<...> if it may be absent");
    hint_c_array = engine.getCustomDiagID(Level::Note, "use std::array<...>");
    hint_container = engine.getCustomDiagID(
        Level::Note, "use std::vector<...> or std::array<...>");
    hint_union = engine.getCustomDiagID(Level::Note, "use std::variant<...>");
    unmarked_module = engine.getCustomDiagID(
        Level::Error,
        "field '%0' has type %1, which holds parameters but is not marked "
        "KINDLING_MODULE");
    unmarked_element = engine.getCustomDiagID(
        Level::Error,
        "field '%0' has type %1, which holds parameters through '%2', a "
        "struct not marked KINDLING_MODULE");
    add_mark =
        engine.getCustomDiagID(Level::Note, "add KINDLING_MODULE to '%0'");
    mixed_variant = engine.getCustomDiagID(
        Level::Error,
        "field '%0' has unsupported type %1; every alternative of a "
        "std::variant must hold parameters, or none");
    constant_alternative = engine.getCustomDiagID(
        Level::Note, "alternative %0 holds no parameters");
    anonymous_member = engine.getCustomDiagID(
        Level::Error,
        "anonymous member of module '%0' holds parameters; give it a name and "
        "a type marked KINDLING_MODULE");
    not_public = engine.getCustomDiagID(
        Level::Error,
        "field '%0' of module '%1' is not public; generated code reads it "
        "directly");
    make_public = engine.getCustomDiagID(
        Level::Note, "make it public, or mark it KINDLING_SKIP");
    const_parametric = engine.getCustomDiagID(
        Level::Error,
        "field '%0' holds parameters but is const; loading a record assigns "
        "to it");
    missing_traits = engine.getCustomDiagID(
        Level::Error,
        "field '%0' holds module '%1', which has no ModuleTraits here: '%2' "
        "was not found");
    generate_traits = engine.getCustomDiagID(
        Level::Note,
        "generate it with kindling_module_library over this header (and add "
        "that library to deps), or specialize kindling::ModuleTraits here");
    no_parameters = engine.getCustomDiagID(
        warning, "module '%0' has no fields that hold parameters");
  }

  clang::DiagnosticsEngine& engine;
  bool warnings_enabled;
  unsigned duplicate_mark, previous_mark, union_module, nested_module,
      specialization_module, record_name_taken, declared_here,
      base_with_parameters, unsupported_type, hint_pointer, hint_smart_pointer,
      hint_c_array, hint_container, hint_union, unmarked_module,
      unmarked_element, add_mark, mixed_variant, constant_alternative,
      anonymous_member, not_public, make_public, const_parametric,
      missing_traits, generate_traits, no_parameters;
};

class ModuleCollector : public clang::RecursiveASTVisitor<ModuleCollector> {
 public:
  ModuleCollector(clang::ASTContext& context, clang::Preprocessor& preprocessor,
                  clang::DiagnosticsEngine& diagnostics,
                  const std::vector<std::string>& sibling_includes)
      : context_(context),
        preprocessor_(preprocessor),
        sibling_includes_(sibling_includes),
        source_manager_(context.getSourceManager()),
        diagnostics_(diagnostics),
        classifier_(context),
        policy_(context.getLangOpts()) {
    policy_.SuppressUnwrittenScope = true;
    policy_.SuppressInlineNamespace = true;
    policy_.AnonymousTagLocations = false;
    policy_.FullyQualifiedName = true;
  }

  std::vector<Module> TakeModules() { return std::move(modules_); }
  std::vector<std::string> TakeSubmoduleIncludes() {
    return std::move(submodule_includes_);
  }

  // Only the main file's declarations matter; skipping everything else (the
  // whole standard library) keeps the walk cheap.
  bool TraverseDecl(clang::Decl* decl) {
    if (decl == nullptr) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(decl) &&
        !source_manager_.isWrittenInMainFile(
            source_manager_.getExpansionLoc(decl->getLocation()))) {
      return true;
    }
    return RecursiveASTVisitor::TraverseDecl(decl);
  }

  bool VisitCXXRecordDecl(clang::CXXRecordDecl* record) {
    if (!record->isThisDeclarationADefinition() || record->isInvalidDecl()) {
      return true;
    }
    const auto marks = ModuleMarks(record);
    if (marks.empty()) return true;
    if (marks.size() > 1) {
      Report(marks[1]->getLocation(), diagnostics_.duplicate_mark)
          << QualifiedName(record);
      Report(marks[0]->getLocation(), diagnostics_.previous_mark);
      return true;
    }
    if (record->isUnion()) {
      Report(record->getLocation(), diagnostics_.union_module)
          << QualifiedName(record);
      return true;
    }
    if (!record->getDeclContext()->getRedeclContext()->isFileContext()) {
      Report(record->getLocation(), diagnostics_.nested_module)
          << QualifiedName(record);
      return true;
    }
    if (const auto* specialization =
            llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(record)) {
      Report(record->getLocation(), diagnostics_.specialization_module)
          << QualifiedName(specialization->getSpecializedTemplate());
      return true;
    }
    CollectModule(record);
    return true;
  }

 private:
  // The KINDLING_MODULE marks written on this declaration (not inherited from
  // an earlier one).
  llvm::SmallVector<const clang::AnnotateAttr*, 1> ModuleMarks(
      const clang::CXXRecordDecl* record) const {
    llvm::SmallVector<const clang::AnnotateAttr*, 1> marks;
    for (const auto* attr : record->specific_attrs<clang::AnnotateAttr>()) {
      if (attr->getAnnotation() == kModuleAnnotation && !attr->isInherited()) {
        marks.push_back(attr);
      }
    }
    if (marks.empty() && IsMarkedModule(record) &&
        !llvm::isa<clang::ClassTemplateSpecializationDecl>(record)) {
      // Marked only on an earlier declaration; still a module.
      for (const auto* attr : record->specific_attrs<clang::AnnotateAttr>()) {
        if (attr->getAnnotation() == kModuleAnnotation) {
          marks.push_back(attr);
          break;
        }
      }
    }
    return marks;
  }

  void CollectModule(const clang::CXXRecordDecl* record) {
    Module module;
    module.name = record->getNameAsString();
    module.qualified_name = QualifiedName(record);
    module.namespaces = EnclosingNamespaces(record);
    if (const clang::ClassTemplateDecl* class_template =
            record->getDescribedClassTemplate()) {
      module.template_parameters =
          TemplateParameters(*class_template->getTemplateParameters());
    }
    if (!CheckRecordName(record, module)) return;
    const unsigned errors_before = diagnostics_.engine.getNumErrors();
    CheckBases(record, module);
    CollectFields(record, module);
    // After an error the warning would only repeat it.
    const bool had_errors = diagnostics_.engine.getNumErrors() != errors_before;
    if (module.parametric_fields.empty() && !had_errors &&
        diagnostics_.warnings_enabled) {
      Report(record->getLocation(), diagnostics_.no_parameters)
          << module.qualified_name;
    }
    modules_.push_back(std::move(module));
  }

  // The generated `<Name>Record` must not collide with a user declaration.
  bool CheckRecordName(const clang::CXXRecordDecl* record,
                       const Module& module) {
    const std::string record_name = module.name + "Record";
    const clang::DeclContext* scope =
        record->getDeclContext()->getRedeclContext();
    for (const clang::NamedDecl* existing :
         scope->lookup(&context_.Idents.get(record_name))) {
      std::string qualified = QualifiedName(existing);
      Report(record->getLocation(), diagnostics_.record_name_taken)
          << qualified << module.qualified_name;
      Report(existing->getLocation(), diagnostics_.declared_here) << qualified;
      return false;
    }
    return true;
  }

  // Bases are not walked by the runtime, so they must hold no parameters.
  void CheckBases(const clang::CXXRecordDecl* record, const Module& module) {
    for (const clang::CXXBaseSpecifier& base : record->bases()) {
      if (base.getType()->isDependentType()) continue;
      if (classifier_.Classify(base.getType()).HoldsParameters()) {
        Report(base.getBeginLoc(), diagnostics_.base_with_parameters)
            << base.getType() << module.qualified_name;
      }
    }
  }

  void CollectFields(const clang::CXXRecordDecl* record, Module& module) {
    for (const clang::FieldDecl* field : record->fields()) {
      if (HasSkipMark(field) || field->isUnnamedBitfield()) continue;
      const clang::QualType type = field->getType();
      const FieldClass field_class = classifier_.Classify(type);
      if (field->isAnonymousStructOrUnion()) {
        if (field_class.HoldsParameters()) {
          Report(field->getLocation(), diagnostics_.anonymous_member)
              << module.qualified_name;
        }
        continue;
      }
      if (!CheckFieldClass(field, field_class)) continue;
      if (field->getAccess() != clang::AS_public) {
        Report(field->getLocation(), diagnostics_.not_public)
            << field->getName() << module.qualified_name;
        Report(field->getLocation(), diagnostics_.make_public);
        continue;
      }
      Field entry{field->getNameAsString(), FieldTypeName(record, type)};
      if (field_class.kind == FieldKind::kConstant) {
        module.constants.push_back(std::move(entry));
        continue;
      }
      if (type.isConstQualified()) {
        Report(field->getLocation(), diagnostics_.const_parametric)
            << field->getName();
        continue;
      }
      module.parametric_fields.push_back(std::move(entry));
      llvm::SmallVector<const clang::CXXRecordDecl*, 2> submodules;
      classifier_.Submodules(type, submodules);
      for (const clang::CXXRecordDecl* submodule : submodules) {
        IncludeTraitsOf(field, submodule);
      }
    }
  }

  // Makes the traits of a submodule from another header visible before the
  // records that name them: through that header's generated file, unless a
  // specialization is already visible.
  void IncludeTraitsOf(const clang::FieldDecl* field,
                       const clang::CXXRecordDecl* submodule) {
    const clang::CXXRecordDecl* declaration = submodule;
    const auto* specialization =
        llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(submodule);
    if (specialization != nullptr) {
      declaration =
          specialization->getSpecializedTemplate()->getTemplatedDecl();
    }
    const clang::SourceLocation location =
        source_manager_.getExpansionLoc(declaration->getLocation());
    if (source_manager_.isWrittenInMainFile(location)) return;
    if (!resolved_submodules_.insert(declaration->getCanonicalDecl()).second) {
      return;
    }
    if (HasVisibleTraits(submodule)) return;
    const clang::FileEntry* file =
        source_manager_.getFileEntryForID(source_manager_.getFileID(location));
    if (file == nullptr) return;
    const std::string generated = GeneratedPath(
        preprocessor_.getHeaderSearchInfo().suggestPathToFileForDiagnostics(
            file, ""));
    if (llvm::is_contained(sibling_includes_, generated)) {
      submodule_includes_.push_back(generated);
      return;
    }
    const clang::DirectoryLookup* directory = nullptr;
    // Searched as `#include "..."` from the include path (the preprocessor's
    // own lookup needs a file being lexed, and parsing is over).
    if (preprocessor_.getHeaderSearchInfo().LookupFile(
            generated, location, /*isAngled=*/false, /*FromDir=*/nullptr,
            &directory, /*Includers=*/{}, /*SearchPath=*/nullptr,
            /*RelativePath=*/nullptr, /*RequestingModule=*/nullptr,
            /*SuggestedModule=*/nullptr, /*IsMapped=*/nullptr,
            /*IsFrameworkFound=*/nullptr)) {
      submodule_includes_.push_back(generated);
      return;
    }
    Report(field->getLocation(), diagnostics_.missing_traits)
        << field->getName() << QualifiedName(declaration) << generated;
    Report(declaration->getLocation(), diagnostics_.generate_traits);
  }

  // Whether kindling::ModuleTraits is already specialized for `module` (or,
  // for a class template specialization, partially for its template).
  bool HasVisibleTraits(const clang::CXXRecordDecl* module) {
    const clang::ClassTemplateDecl* traits = ModuleTraitsTemplate();
    if (traits == nullptr) return false;
    const clang::QualType type = context_.getRecordType(module);
    for (const clang::ClassTemplateSpecializationDecl* existing :
         traits->specializations()) {
      if (existing->getSpecializationKind() ==
              clang::TSK_ExplicitSpecialization &&
          existing->getTemplateArgs().size() == 1 &&
          existing->getTemplateArgs()[0].getKind() ==
              clang::TemplateArgument::Type &&
          context_.hasSameType(existing->getTemplateArgs()[0].getAsType(),
                               type)) {
        return true;
      }
    }
    const auto* specialization =
        llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(module);
    if (specialization == nullptr) return false;
    llvm::SmallVector<clang::ClassTemplatePartialSpecializationDecl*, 4>
        partials;
    const_cast<clang::ClassTemplateDecl*>(traits)->getPartialSpecializations(
        partials);
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
          pattern_template->getCanonicalDecl() ==
              specialization->getSpecializedTemplate()->getCanonicalDecl()) {
        return true;
      }
    }
    return false;
  }

  const clang::ClassTemplateDecl* ModuleTraitsTemplate() {
    clang::IdentifierTable& identifiers = context_.Idents;
    for (const clang::NamedDecl* space :
         context_.getTranslationUnitDecl()->lookup(
             &identifiers.get("kindling"))) {
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

  // Reports a field whose class is a mistake; returns whether it is usable.
  bool CheckFieldClass(const clang::FieldDecl* field,
                       const FieldClass& field_class) {
    const clang::SourceLocation type_location =
        field->getTypeSourceInfo() != nullptr
            ? field->getTypeSourceInfo()->getTypeLoc().getBeginLoc()
            : field->getLocation();
    switch (field_class.kind) {
      case FieldKind::kConstant:
      case FieldKind::kParametric:
        return true;
      case FieldKind::kUnsupported:
        Report(field->getLocation(), diagnostics_.unsupported_type)
            << field->getName() << field->getType();
        Report(type_location, HintFor(field_class.hint));
        return false;
      case FieldKind::kUnmarkedModule: {
        const clang::CXXRecordDecl* unmarked = field_class.unmarked_record;
        const std::string unmarked_name = QualifiedName(unmarked);
        const clang::CXXRecordDecl* field_record =
            field->getType()->getAsCXXRecordDecl();
        const bool is_direct =
            field_record != nullptr &&
            (field_record->getCanonicalDecl() == unmarked->getCanonicalDecl() ||
             (llvm::isa<clang::ClassTemplateSpecializationDecl>(field_record) &&
              llvm::cast<clang::ClassTemplateSpecializationDecl>(field_record)
                      ->getSpecializedTemplate()
                      ->getTemplatedDecl()
                      ->getCanonicalDecl() == unmarked->getCanonicalDecl()));
        if (is_direct) {
          Report(field->getLocation(), diagnostics_.unmarked_module)
              << field->getName() << field->getType();
        } else {
          Report(field->getLocation(), diagnostics_.unmarked_element)
              << field->getName() << field->getType() << unmarked_name;
        }
        Report(unmarked->getLocation(), diagnostics_.add_mark)
            << unmarked_name
            << clang::FixItHint::CreateInsertion(
                   source_manager_.getExpansionLoc(unmarked->getLocation()),
                   "KINDLING_MODULE ");
        return false;
      }
      case FieldKind::kMixedVariant:
        Report(field->getLocation(), diagnostics_.mixed_variant)
            << field->getName() << field->getType();
        Report(type_location, diagnostics_.constant_alternative)
            << AsWritten(field->getType(), field_class.constant_alternative);
        return false;
    }
    return false;
  }

  // The template argument of `written` (as the user spelled it) that is
  // `canonical`, so a note says 'std::string', not 'std::basic_string<char>'.
  clang::QualType AsWritten(clang::QualType written,
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

  unsigned HintFor(UnsupportedHint hint) const {
    switch (hint) {
      case UnsupportedHint::kPointer:
        return diagnostics_.hint_pointer;
      case UnsupportedHint::kSmartPointer:
        return diagnostics_.hint_smart_pointer;
      case UnsupportedHint::kCArray:
        return diagnostics_.hint_c_array;
      case UnsupportedHint::kContainer:
        return diagnostics_.hint_container;
      case UnsupportedHint::kUnion:
        return diagnostics_.hint_union;
    }
    return diagnostics_.hint_container;
  }

  std::vector<TemplateParameter> TemplateParameters(
      const clang::TemplateParameterList& parameters) {
    std::vector<TemplateParameter> result;
    for (unsigned index = 0; index < parameters.size(); ++index) {
      const clang::NamedDecl* parameter = parameters.getParam(index);
      std::string name = parameter->getNameAsString();
      // An unnamed parameter still needs a name in the specialization.
      if (name.empty()) name = "Parameter" + std::to_string(index);
      const bool is_pack = parameter->isParameterPack();
      const std::string pack = is_pack ? "..." : "";
      std::string declaration;
      llvm::raw_string_ostream out(declaration);
      if (const auto* type_parameter =
              llvm::dyn_cast<clang::TemplateTypeParmDecl>(parameter)) {
        if (const clang::TypeConstraint* constraint =
                type_parameter->getTypeConstraint()) {
          out << QualifiedName(constraint->getNamedConcept());
          if (const auto* arguments = constraint->getTemplateArgsAsWritten()) {
            clang::printTemplateArgumentList(out, arguments->arguments(),
                                             policy_);
          }
        } else {
          out << (type_parameter->wasDeclaredWithTypename() ? "typename"
                                                            : "class");
        }
      } else if (const auto* value_parameter =
                     llvm::dyn_cast<clang::NonTypeTemplateParmDecl>(
                         parameter)) {
        clang::QualType type = value_parameter->getType();
        if (is_pack) {
          if (const auto* expansion = type->getAs<clang::PackExpansionType>()) {
            type = expansion->getPattern();
          }
        }
        out << FullyQualifiedType(type);
      } else {
        // A template template parameter: its source text up to the name.
        out << clang::Lexer::getSourceText(
                   clang::CharSourceRange::getCharRange(
                       parameter->getBeginLoc(), parameter->getLocation()),
                   source_manager_, context_.getLangOpts())
                   .rtrim()
                   .rtrim('.')
                   .rtrim();
      }
      out << pack << " " << name;
      result.push_back({std::move(declaration), name + pack});
    }
    return result;
  }

  std::vector<Namespace> EnclosingNamespaces(
      const clang::CXXRecordDecl* record) const {
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

  std::string QualifiedName(const clang::NamedDecl* decl) const {
    std::string name;
    llvm::raw_string_ostream out(name);
    decl->printQualifiedName(out, policy_);
    return name;
  }

  // The field's type as the record spells it: fully qualified, except for
  // dependent types in templates with template template parameters, which
  // clang's qualifier would wrongly scope to an instantiation. Those stay as
  // written; the record sits in the module's namespace, so they mean the same.
  std::string FieldTypeName(const clang::CXXRecordDecl* record,
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

  std::string FullyQualifiedType(clang::QualType type) const {
    return clang::TypeName::getFullyQualifiedName(type, context_, policy_);
  }

  // Reports at the place the user wrote (through macros, at the expansion).
  clang::DiagnosticBuilder Report(clang::SourceLocation location, unsigned id) {
    return diagnostics_.engine.Report(source_manager_.getExpansionLoc(location),
                                      id);
  }

  clang::ASTContext& context_;
  clang::Preprocessor& preprocessor_;
  const std::vector<std::string>& sibling_includes_;
  const clang::SourceManager& source_manager_;
  Diagnostics diagnostics_;
  FieldClassifier classifier_;
  clang::PrintingPolicy policy_;
  std::vector<Module> modules_;
  std::vector<std::string> submodule_includes_;
  llvm::SmallPtrSet<const clang::Decl*, 8> resolved_submodules_;
};

}  // namespace

void CollectModules(clang::ASTContext& context,
                    clang::Preprocessor& preprocessor,
                    clang::DiagnosticsEngine& diagnostics,
                    const std::vector<std::string>& sibling_includes,
                    GeneratedHeader& header) {
  ModuleCollector collector(context, preprocessor, diagnostics,
                            sibling_includes);
  collector.TraverseDecl(context.getTranslationUnitDecl());
  header.modules = collector.TakeModules();
  header.submodule_includes = collector.TakeSubmoduleIncludes();
}

}  // namespace kindling::codegen
