// FieldClassifier: decides what a field type means to the module system.
//
// Every field of a module is one of:
//   * parametric: a leaf (kindling::Param<T>, kindling::Buffer<T>), a
//     submodule (a struct marked KINDLING_MODULE, or a specialization of a
//     marked class template), std::vector / std::array / std::optional of a
//     parametric type, a std::variant whose alternatives are all parametric
//     (std::monostate may stand beside them as the empty alternative), a
//     std::tuple or std::pair with a parametric element (constant elements
//     are kept, not saved), or, inside a class template, any dependent type
//     (the runtime sorts those out when the template is instantiated, and
//     refuses at compile time what it cannot walk);
//   * constant: a type that holds no parameters at all (numbers, enums,
//     strings, unmarked config structs);
//   * a mistake: a type that holds parameters in a way the runtime cannot walk
//     (pointers, smart pointers, maps, C arrays, ...), a struct that holds
//     parameters but lacks KINDLING_MODULE, or a variant mixing the two kinds.
//
// The classifier only answers; the collector turns mistakes into diagnostics.
#ifndef KINDLING_CODEGEN_FIELD_CLASSIFIER_H_
#define KINDLING_CODEGEN_FIELD_CLASSIFIER_H_

#include <optional>
#include <string>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Type.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace kindling::codegen {

// IsMarkedModule: whether `record` (or the class template it specializes)
// carries the kindling::module annotation.
bool IsMarkedModule(const clang::CXXRecordDecl* record);

// HasSkipMark: whether `decl` carries the kindling::skip annotation.
bool HasSkipMark(const clang::Decl* decl);

// KeyMark: the name a KINDLING_KEY("name") on `decl` gives, or nullopt.
std::optional<std::string> KeyMark(const clang::Decl* decl);

enum class FieldKind {
  kConstant,
  kParametric,
  // A type that holds parameters in a container or handle the runtime cannot
  // walk; `hint` says what to use instead.
  kUnsupported,
  // A struct that holds parameters but is not marked; see `unmarked_record`.
  kUnmarkedModule,
  // A std::variant with an alternative that holds no parameters and is not
  // std::monostate; see `constant_alternative`.
  kMixedVariant,
};

// Unsupported: what a kUnsupported type should be replaced with.
enum class UnsupportedHint {
  kPointer,       // raw pointers and references
  kSmartPointer,  // std::unique_ptr, std::shared_ptr, std::weak_ptr
  kCArray,        // T[N]
  kContainer,     // std::map, std::list, std::deque, std::set, ...
  kUnion,         // a union holding parameters
};

struct FieldClass {
  FieldKind kind = FieldKind::kConstant;
  UnsupportedHint hint = UnsupportedHint::kContainer;
  // kUnmarkedModule: the struct (for a template specialization, the templated
  // declaration) that should carry KINDLING_MODULE.
  const clang::CXXRecordDecl* unmarked_record = nullptr;
  // kMixedVariant: the first alternative that holds no parameters.
  clang::QualType constant_alternative;

  // HoldsParameters: anything but kConstant.
  bool HoldsParameters() const { return kind != FieldKind::kConstant; }
};

class FieldClassifier {
 public:
  explicit FieldClassifier(const clang::ASTContext& context)
      : context_(context) {}

  // Classify: the class of a field of type `type`.
  FieldClass Classify(clang::QualType type);

  // Submodules: the module types a parametric field of type `type` holds,
  // directly or in containers (for a class template specialization, the
  // specialization). Dependent types hold none that are known.
  void Submodules(clang::QualType type,
                  llvm::SmallVectorImpl<const clang::CXXRecordDecl*>& modules);

 private:
  FieldClass ClassifyRecord(const clang::CXXRecordDecl* record);
  // ClassifyElements: a tuple or pair; parametric if an element is.
  FieldClass ClassifyElements(
      const clang::ClassTemplateSpecializationDecl* specialization);
  FieldClass ClassifyTemplateArguments(
      const clang::ClassTemplateSpecializationDecl* specialization,
      UnsupportedHint hint);
  // RecordHoldsParameters: whether an unmarked struct has a field or base
  // (recursively) that holds parameters. Memoized; cycles through pointers
  // count as holding none.
  bool RecordHoldsParameters(const clang::CXXRecordDecl* record);

  const clang::ASTContext& context_;
  llvm::DenseMap<const clang::CXXRecordDecl*, bool> holds_parameters_;
};

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_FIELD_CLASSIFIER_H_
