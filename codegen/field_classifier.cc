#include "codegen/field_classifier.h"

#include <string>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclTemplate.h"
#include "llvm/ADT/StringRef.h"

namespace kindling::codegen {
namespace {

constexpr llvm::StringRef kModuleAnnotation = "kindling::module";
constexpr llvm::StringRef kSkipAnnotation = "kindling::skip";
// KINDLING_KEY("name") is annotate("kindling::key=" "name").
constexpr llvm::StringRef kKeyAnnotationPrefix = "kindling::key=";

bool HasAnnotation(const clang::Decl* decl, llvm::StringRef annotation) {
  for (const auto* attr : decl->specific_attrs<clang::AnnotateAttr>()) {
    if (attr->getAnnotation() == annotation) return true;
  }
  return false;
}

// The qualified name of the template `specialization` specializes, without
// inline namespaces: "std::vector", not "std::__cxx11::vector".
std::string TemplateName(
    const clang::ClassTemplateSpecializationDecl* specialization) {
  return specialization->getSpecializedTemplate()->getQualifiedNameAsString();
}

bool IsLeafTemplate(llvm::StringRef name) {
  return name == "kindling::Param" || name == "kindling::Buffer";
}

// Containers whose elements the runtime walks: the first template argument is
// the element type.
bool IsElementContainer(llvm::StringRef name) {
  return name == "std::vector" || name == "std::array" ||
         name == "std::optional";
}

// Tuples whose elements the runtime walks one by one (paths ".0", ".1").
bool IsTuple(llvm::StringRef name) {
  return name == "std::tuple" || name == "std::pair";
}

bool IsMonostate(clang::QualType type) {
  const clang::CXXRecordDecl* record = type->getAsCXXRecordDecl();
  return record != nullptr && record->isInStdNamespace() &&
         record->getName() == "monostate";
}

bool IsSmartPointer(llvm::StringRef name) {
  return name == "std::unique_ptr" || name == "std::shared_ptr" ||
         name == "std::weak_ptr";
}

FieldClass Parametric() {
  FieldClass result;
  result.kind = FieldKind::kParametric;
  return result;
}

FieldClass Unsupported(UnsupportedHint hint) {
  FieldClass result;
  result.kind = FieldKind::kUnsupported;
  result.hint = hint;
  return result;
}

FieldClass UnmarkedModule(const clang::CXXRecordDecl* record) {
  FieldClass result;
  result.kind = FieldKind::kUnmarkedModule;
  result.unmarked_record = record;
  return result;
}

FieldClass MixedVariant(clang::QualType constant_alternative) {
  FieldClass result;
  result.kind = FieldKind::kMixedVariant;
  result.constant_alternative = constant_alternative;
  return result;
}

}  // namespace

bool IsMarkedModule(const clang::CXXRecordDecl* record) {
  if (HasAnnotation(record, kModuleAnnotation)) return true;
  if (const auto* specialization =
          llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(record)) {
    return HasAnnotation(
        specialization->getSpecializedTemplate()->getTemplatedDecl(),
        kModuleAnnotation);
  }
  return false;
}

bool HasSkipMark(const clang::Decl* decl) {
  return HasAnnotation(decl, kSkipAnnotation);
}

std::optional<std::string> KeyMark(const clang::Decl* decl) {
  for (const auto* attr : decl->specific_attrs<clang::AnnotateAttr>()) {
    if (attr->getAnnotation().startswith(kKeyAnnotationPrefix)) {
      return attr->getAnnotation()
          .drop_front(kKeyAnnotationPrefix.size())
          .str();
    }
  }
  return std::nullopt;
}

FieldClass FieldClassifier::Classify(clang::QualType type) {
  if (type.isNull()) return {};
  if (type->isDependentType()) return Parametric();
  if (type->isReferenceType() || type->isAnyPointerType() ||
      type->isMemberPointerType()) {
    if (Classify(type->getPointeeType()).HoldsParameters()) {
      return Unsupported(UnsupportedHint::kPointer);
    }
    return {};
  }
  if (const clang::ArrayType* array = context_.getAsArrayType(type)) {
    if (Classify(array->getElementType()).HoldsParameters()) {
      return Unsupported(UnsupportedHint::kCArray);
    }
    return {};
  }
  if (const clang::CXXRecordDecl* record = type->getAsCXXRecordDecl()) {
    return ClassifyRecord(record);
  }
  return {};
}

FieldClass FieldClassifier::ClassifyRecord(const clang::CXXRecordDecl* record) {
  if (const clang::CXXRecordDecl* definition = record->getDefinition()) {
    record = definition;
  }
  if (IsMarkedModule(record)) return Parametric();

  const auto* specialization =
      llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(record);
  if (specialization != nullptr) {
    const std::string name = TemplateName(specialization);
    if (IsLeafTemplate(name)) return Parametric();
    const clang::TemplateArgumentList& arguments =
        specialization->getTemplateArgs();
    if (IsElementContainer(name) && arguments.size() > 0 &&
        arguments[0].getKind() == clang::TemplateArgument::Type) {
      return Classify(arguments[0].getAsType());
    }
    if (name == "std::variant" && arguments.size() == 1 &&
        arguments[0].getKind() == clang::TemplateArgument::Pack) {
      FieldClass result;
      clang::QualType constant_alternative;
      for (const clang::TemplateArgument& alternative :
           arguments[0].pack_elements()) {
        // std::monostate is the empty alternative: it holds nothing and
        // needs nothing saved, beside any alternatives.
        if (IsMonostate(alternative.getAsType())) continue;
        const FieldClass alternative_class = Classify(alternative.getAsType());
        switch (alternative_class.kind) {
          case FieldKind::kConstant:
            if (constant_alternative.isNull()) {
              constant_alternative = alternative.getAsType();
            }
            break;
          case FieldKind::kParametric:
            result.kind = FieldKind::kParametric;
            break;
          default:
            return alternative_class;
        }
      }
      if (result.HoldsParameters() && !constant_alternative.isNull()) {
        return MixedVariant(constant_alternative);
      }
      return result;
    }
    if (IsTuple(name)) return ClassifyElements(specialization);
    if (record->isInStdNamespace()) {
      return ClassifyTemplateArguments(
          specialization, IsSmartPointer(name) ? UnsupportedHint::kSmartPointer
                                               : UnsupportedHint::kContainer);
    }
  }
  // Anything else from the standard library (strings, mutexes, ...) holds no
  // parameters; its internals are not worth walking.
  if (record->isInStdNamespace()) return {};
  if (!RecordHoldsParameters(record)) return {};
  if (record->isUnion()) return Unsupported(UnsupportedHint::kUnion);
  const clang::CXXRecordDecl* to_mark = record;
  if (specialization != nullptr) {
    to_mark = specialization->getSpecializedTemplate()->getTemplatedDecl();
  }
  return UnmarkedModule(to_mark);
}

void FieldClassifier::Submodules(
    clang::QualType type,
    llvm::SmallVectorImpl<const clang::CXXRecordDecl*>& modules) {
  if (type.isNull() || type->isDependentType()) return;
  const clang::CXXRecordDecl* record = type->getAsCXXRecordDecl();
  if (record == nullptr) return;
  if (IsMarkedModule(record)) {
    modules.push_back(record);
    return;
  }
  const auto* specialization =
      llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(record);
  if (specialization == nullptr || !record->isInStdNamespace()) return;
  for (const clang::TemplateArgument& argument :
       specialization->getTemplateArgs().asArray()) {
    if (argument.getKind() == clang::TemplateArgument::Type) {
      Submodules(argument.getAsType(), modules);
    } else if (argument.getKind() == clang::TemplateArgument::Pack) {
      for (const clang::TemplateArgument& element : argument.pack_elements()) {
        if (element.getKind() == clang::TemplateArgument::Type) {
          Submodules(element.getAsType(), modules);
        }
      }
    }
  }
}

FieldClass FieldClassifier::ClassifyElements(
    const clang::ClassTemplateSpecializationDecl* specialization) {
  FieldClass result;
  for (const clang::TemplateArgument& argument :
       specialization->getTemplateArgs().asArray()) {
    llvm::ArrayRef<clang::TemplateArgument> elements = argument;
    if (argument.getKind() == clang::TemplateArgument::Pack) {
      elements = argument.pack_elements();
    }
    for (const clang::TemplateArgument& element : elements) {
      if (element.getKind() != clang::TemplateArgument::Type) continue;
      const FieldClass element_class = Classify(element.getAsType());
      if (element_class.kind == FieldKind::kParametric) {
        result.kind = FieldKind::kParametric;
      } else if (element_class.kind != FieldKind::kConstant) {
        return element_class;
      }
    }
  }
  return result;
}

FieldClass FieldClassifier::ClassifyTemplateArguments(
    const clang::ClassTemplateSpecializationDecl* specialization,
    UnsupportedHint hint) {
  for (const clang::TemplateArgument& argument :
       specialization->getTemplateArgs().asArray()) {
    if (argument.getKind() == clang::TemplateArgument::Type &&
        Classify(argument.getAsType()).HoldsParameters()) {
      return Unsupported(hint);
    }
    if (argument.getKind() == clang::TemplateArgument::Pack) {
      for (const clang::TemplateArgument& element : argument.pack_elements()) {
        if (element.getKind() == clang::TemplateArgument::Type &&
            Classify(element.getAsType()).HoldsParameters()) {
          return Unsupported(hint);
        }
      }
    }
  }
  return {};
}

bool FieldClassifier::RecordHoldsParameters(
    const clang::CXXRecordDecl* record) {
  if (!record->hasDefinition()) return false;
  const auto [entry, inserted] = holds_parameters_.try_emplace(record, false);
  if (!inserted) return entry->second;
  bool holds = false;
  for (const clang::CXXBaseSpecifier& base : record->bases()) {
    holds = holds || Classify(base.getType()).HoldsParameters();
  }
  for (const clang::FieldDecl* field : record->fields()) {
    holds = holds || Classify(field->getType()).HoldsParameters();
  }
  // The map may have grown while recursing, so look the entry up again.
  holds_parameters_[record] = holds;
  return holds;
}

}  // namespace kindling::codegen
