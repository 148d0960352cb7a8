#include "codegen/module_collector.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "codegen/declaration_names.h"
#include "codegen/diagnostics.h"
#include "codegen/field_classifier.h"
#include "codegen/submodule_traits.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace kindling::codegen {
namespace {

constexpr llvm::StringRef kModuleAnnotation = "kindling::module";

// The declaration that is a class member when `record` is nested: the class
// template it describes, if any (access is recorded there), else itself.
const clang::NamedDecl* MemberDeclaration(const clang::CXXRecordDecl* record) {
  if (const clang::ClassTemplateDecl* described =
          record->getDescribedClassTemplate()) {
    return described;
  }
  return record;
}

class ModuleCollector : public clang::RecursiveASTVisitor<ModuleCollector> {
 public:
  ModuleCollector(clang::ASTContext& context, clang::Preprocessor& preprocessor,
                  clang::DiagnosticsEngine& diagnostics,
                  const std::vector<std::string>& sibling_includes)
      : context_(context),
        source_manager_(context.getSourceManager()),
        diagnostics_(diagnostics),
        classifier_(context),
        names_(context),
        submodule_traits_(context, preprocessor, sibling_includes) {}

  std::vector<Module> TakeModules() { return std::move(modules_); }
  std::vector<std::string> TakeSubmoduleIncludes() {
    return std::move(submodule_includes_);
  }

  // A nested module is visited before the class around it: when that class
  // is a module too, its record names the nested module's record, which
  // needs the nested module's traits emitted first.
  bool shouldTraversePostOrder() const { return true; }

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
      Report(marks[1]->getLocation(), Diagnostic::kDuplicateMark)
          << names_.QualifiedName(record);
      Report(marks[0]->getLocation(), Diagnostic::kPreviousMark);
      return true;
    }
    if (record->isUnion()) {
      Report(record->getLocation(), Diagnostic::kUnionModule)
          << names_.QualifiedName(record);
      return true;
    }
    std::vector<std::string> enclosing_classes;
    if (!CheckEnclosingClasses(record, enclosing_classes)) return true;
    if (const auto* specialization =
            llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(record)) {
      Report(record->getLocation(), Diagnostic::kSpecializationModule)
          << names_.QualifiedName(specialization->getSpecializedTemplate());
      return true;
    }
    CollectModule(record, std::move(enclosing_classes));
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

  // Whether generated code at namespace scope can name `record`: every class
  // it is nested in must be named, not a template, and give public access.
  // Fills `enclosing_classes`, outermost first.
  bool CheckEnclosingClasses(const clang::CXXRecordDecl* record,
                             std::vector<std::string>& enclosing_classes) {
    const clang::NamedDecl* member = MemberDeclaration(record);
    for (const clang::DeclContext* scope = record->getDeclContext();
         !scope->isFileContext(); scope = scope->getParent()) {
      if (scope->isFunctionOrMethod()) {
        Report(record->getLocation(), Diagnostic::kLocalModule)
            << names_.QualifiedName(record);
        return false;
      }
      const auto* outer = llvm::dyn_cast<clang::CXXRecordDecl>(scope);
      if (outer == nullptr) continue;  // extern "C++" { ... } and the like
      if (outer->isDependentContext() ||
          llvm::isa<clang::ClassTemplateSpecializationDecl>(outer)) {
        Report(record->getLocation(), Diagnostic::kNestedInTemplate)
            << names_.QualifiedName(record) << names_.QualifiedName(outer);
        return false;
      }
      if (outer->getIdentifier() == nullptr) {
        Report(record->getLocation(), Diagnostic::kNestedInUnnamed)
            << names_.QualifiedName(record);
        return false;
      }
      if (member->getAccess() != clang::AS_public) {
        ReportNotPublic(record, member, outer);
        return false;
      }
      enclosing_classes.insert(enclosing_classes.begin(),
                               outer->getNameAsString());
      member = MemberDeclaration(outer);
    }
    return true;
  }

  // `member` (the nested module or a class around it) is a private or
  // protected member of `outer`.
  void ReportNotPublic(const clang::CXXRecordDecl* record,
                       const clang::NamedDecl* member,
                       const clang::CXXRecordDecl* outer) {
    const char* access =
        member->getAccess() == clang::AS_private ? "private" : "protected";
    if (member == MemberDeclaration(record)) {
      Report(record->getLocation(), Diagnostic::kNestedNotPublic)
          << names_.QualifiedName(record) << access
          << names_.QualifiedName(outer);
    } else {
      Report(record->getLocation(), Diagnostic::kNestedInNotPublic)
          << names_.QualifiedName(record) << names_.QualifiedName(member)
          << access << names_.QualifiedName(outer);
    }
    Report(member->getLocation(), Diagnostic::kMakeNestedPublic)
        << member->getName() << names_.QualifiedName(outer);
  }

  void CollectModule(const clang::CXXRecordDecl* record,
                     std::vector<std::string> enclosing_classes) {
    Module module;
    module.name = record->getNameAsString();
    module.qualified_name = names_.QualifiedName(record);
    module.namespaces = DeclarationNames::EnclosingNamespaces(record);
    module.enclosing_classes = std::move(enclosing_classes);
    if (const clang::ClassTemplateDecl* class_template =
            record->getDescribedClassTemplate()) {
      module.template_parameters =
          names_.TemplateParameters(*class_template->getTemplateParameters());
    }
    if (!CheckRecordName(record, module)) return;
    const unsigned errors_before = diagnostics_.NumErrors();
    CheckBases(record, module);
    CollectFields(record, module);
    // After an error the warning would only repeat it.
    const bool had_errors = diagnostics_.NumErrors() != errors_before;
    if (module.parametric_fields.empty() && !had_errors &&
        diagnostics_.WarningsEnabled()) {
      Report(record->getLocation(), Diagnostic::kNoParameters)
          << module.qualified_name;
    }
    modules_.push_back(std::move(module));
  }

  // The generated record must not collide with a user declaration in the
  // namespace it goes to.
  bool CheckRecordName(const clang::CXXRecordDecl* record,
                       const Module& module) {
    const clang::DeclContext* scope = record->getDeclContext();
    while (!scope->isFileContext()) scope = scope->getParent();
    for (const clang::NamedDecl* existing : scope->getRedeclContext()->lookup(
             &context_.Idents.get(RecordName(module)))) {
      const std::string qualified = names_.QualifiedName(existing);
      Report(record->getLocation(), Diagnostic::kRecordNameTaken)
          << qualified << module.qualified_name;
      Report(existing->getLocation(), Diagnostic::kDeclaredHere) << qualified;
      return false;
    }
    return true;
  }

  // Bases are not walked by the runtime, so they must hold no parameters.
  void CheckBases(const clang::CXXRecordDecl* record, const Module& module) {
    for (const clang::CXXBaseSpecifier& base : record->bases()) {
      if (base.getType()->isDependentType()) continue;
      if (classifier_.Classify(base.getType()).HoldsParameters()) {
        Report(base.getBeginLoc(), Diagnostic::kBaseWithParameters)
            << base.getType() << module.qualified_name;
      }
    }
  }

  void CollectFields(const clang::CXXRecordDecl* record, Module& module) {
    // Each saved name and the field that has it, for KeyTaken.
    llvm::StringMap<const clang::FieldDecl*> keys;
    for (const clang::FieldDecl* field : record->fields()) {
      if (HasSkipMark(field) || field->isUnnamedBitfield()) continue;
      const clang::QualType type = field->getType();
      const FieldClass field_class = classifier_.Classify(type);
      if (field->isAnonymousStructOrUnion()) {
        if (field_class.HoldsParameters()) {
          Report(field->getLocation(), Diagnostic::kAnonymousMember)
              << module.qualified_name;
        }
        continue;
      }
      if (!CheckFieldClass(field, field_class)) continue;
      if (field->getAccess() != clang::AS_public) {
        Report(field->getLocation(), Diagnostic::kNotPublic)
            << field->getName() << module.qualified_name;
        Report(field->getLocation(), Diagnostic::kMakePublic);
        continue;
      }
      Field entry{field->getNameAsString(), names_.FieldTypeName(record, type),
                  field->getNameAsString()};
      if (!CheckKey(field, module, keys, entry)) continue;
      if (field_class.kind == FieldKind::kConstant) {
        module.constants.push_back(std::move(entry));
        continue;
      }
      if (type.isConstQualified()) {
        Report(field->getLocation(), Diagnostic::kConstParametric)
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

  // CheckKey(): sets entry.key from a KINDLING_KEY mark and reports a
  // malformed key, or a name two fields would share.
  bool CheckKey(const clang::FieldDecl* field, const Module& module,
                llvm::StringMap<const clang::FieldDecl*>& keys, Field& entry) {
    if (std::optional<std::string> key = KeyMark(field)) {
      const bool well_formed =
          !key->empty() && std::all_of(key->begin(), key->end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                   c == '-';
          });
      if (!well_formed) {
        Report(field->getLocation(), Diagnostic::kBadKey)
            << *key << field->getName();
        return false;
      }
      entry.key = *key;
    }
    auto [it, inserted] = keys.try_emplace(entry.key, field);
    if (!inserted) {
      Report(field->getLocation(), Diagnostic::kKeyTaken)
          << field->getName() << module.qualified_name << entry.key
          << it->second->getName();
      Report(it->second->getLocation(), Diagnostic::kKeyTakenHere)
          << it->second->getName() << entry.key;
      return false;
    }
    return true;
  }

  // Makes the traits of a submodule from another header visible before the
  // records that name them, or reports that they are missing.
  void IncludeTraitsOf(const clang::FieldDecl* field,
                       const clang::CXXRecordDecl* submodule) {
    const SubmoduleTraitsSource source = submodule_traits_.Find(submodule);
    switch (source.kind) {
      case SubmoduleTraitsSource::Kind::kNothingToInclude:
        return;
      case SubmoduleTraitsSource::Kind::kInclude:
        submodule_includes_.push_back(source.generated_include);
        return;
      case SubmoduleTraitsSource::Kind::kMissing:
        Report(field->getLocation(), Diagnostic::kMissingTraits)
            << field->getName() << names_.QualifiedName(source.declaration)
            << source.generated_include;
        Report(source.declaration->getLocation(), Diagnostic::kGenerateTraits);
        return;
    }
  }

  // Reports a field whose class is a mistake; returns whether it is usable.
  bool CheckFieldClass(const clang::FieldDecl* field,
                       const FieldClass& field_class) {
    switch (field_class.kind) {
      case FieldKind::kConstant:
      case FieldKind::kParametric:
        return true;
      case FieldKind::kUnsupported:
        Report(field->getLocation(), Diagnostic::kUnsupportedType)
            << field->getName() << field->getType();
        Report(TypeLocation(field), HintFor(field_class.hint));
        return false;
      case FieldKind::kUnmarkedModule:
        ReportUnmarkedModule(field, field_class.unmarked_record);
        return false;
      case FieldKind::kMixedVariant:
        Report(field->getLocation(), Diagnostic::kMixedVariant)
            << field->getName() << field->getType();
        Report(TypeLocation(field), Diagnostic::kConstantAlternative)
            << names_.AsWritten(field->getType(),
                                field_class.constant_alternative);
        Report(TypeLocation(field), Diagnostic::kHintMonostate);
        return false;
    }
    return false;
  }

  // A field that holds parameters through `unmarked`, a struct without
  // KINDLING_MODULE: directly, or inside a container.
  void ReportUnmarkedModule(const clang::FieldDecl* field,
                            const clang::CXXRecordDecl* unmarked) {
    const std::string unmarked_name = names_.QualifiedName(unmarked);
    // For a template specialization, the template's declaration is marked.
    const clang::CXXRecordDecl* field_record =
        field->getType()->getAsCXXRecordDecl();
    if (const auto* specialization =
            llvm::dyn_cast_or_null<clang::ClassTemplateSpecializationDecl>(
                field_record)) {
      field_record =
          specialization->getSpecializedTemplate()->getTemplatedDecl();
    }
    if (field_record != nullptr &&
        field_record->getCanonicalDecl() == unmarked->getCanonicalDecl()) {
      Report(field->getLocation(), Diagnostic::kUnmarkedModule)
          << field->getName() << field->getType();
    } else {
      Report(field->getLocation(), Diagnostic::kUnmarkedElement)
          << field->getName() << field->getType() << unmarked_name;
    }
    Report(unmarked->getLocation(), Diagnostic::kAddMark)
        << unmarked_name
        << clang::FixItHint::CreateInsertion(
               source_manager_.getExpansionLoc(unmarked->getLocation()),
               "KINDLING_MODULE ");
  }

  static Diagnostic HintFor(UnsupportedHint hint) {
    switch (hint) {
      case UnsupportedHint::kPointer:
        return Diagnostic::kHintPointer;
      case UnsupportedHint::kSmartPointer:
        return Diagnostic::kHintSmartPointer;
      case UnsupportedHint::kCArray:
        return Diagnostic::kHintCArray;
      case UnsupportedHint::kContainer:
        return Diagnostic::kHintContainer;
      case UnsupportedHint::kUnion:
        return Diagnostic::kHintUnion;
    }
    return Diagnostic::kHintContainer;
  }

  // Where the field's type is written, for notes about the type.
  static clang::SourceLocation TypeLocation(const clang::FieldDecl* field) {
    return field->getTypeSourceInfo() != nullptr
               ? field->getTypeSourceInfo()->getTypeLoc().getBeginLoc()
               : field->getLocation();
  }

  clang::DiagnosticBuilder Report(clang::SourceLocation location,
                                  Diagnostic diagnostic) {
    return diagnostics_.Report(location, diagnostic);
  }

  clang::ASTContext& context_;
  const clang::SourceManager& source_manager_;
  Diagnostics diagnostics_;
  FieldClassifier classifier_;
  DeclarationNames names_;
  SubmoduleTraits submodule_traits_;
  std::vector<Module> modules_;
  std::vector<std::string> submodule_includes_;
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
