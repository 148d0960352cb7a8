// SubmoduleTraits: where the ModuleTraits of a submodule declared in another
// header come from.
//
// A module's record names RecordOf<Submodule>, so the submodule's traits must
// be visible before the generated file defines that record. For a submodule
// of another header they are, in order of preference: a specialization
// already visible in the parsed header (hand-written, or from a generated
// file it includes), the generated file of a sibling header of the same
// library (written by another build action, so taken on trust), or the
// generated file `<header>.kindling.h` found on the include path. Anything
// else is missing, and the collector reports it.
#ifndef KINDLING_CODEGEN_SUBMODULE_TRAITS_H_
#define KINDLING_CODEGEN_SUBMODULE_TRAITS_H_

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kindling::codegen {

// HasVisibleModuleTraits: whether kindling::ModuleTraits is explicitly
// specialized for `module` in `context` (or, for a class template
// specialization, partially specialized for its template).
bool HasVisibleModuleTraits(clang::ASTContext& context,
                            const clang::CXXRecordDecl* module);

// SubmoduleTraitsSource: what SubmoduleTraits::Find() decided.
struct SubmoduleTraitsSource {
  enum class Kind {
    // Declared in the main file, visible already, or asked about before:
    // nothing to include.
    kNothingToInclude,
    // Include `generated_include` before the records.
    kInclude,
    // `generated_include` does not exist and no traits are visible.
    kMissing,
  };
  Kind kind = Kind::kNothingToInclude;
  // The generated file of the submodule's header, as included.
  std::string generated_include;
  // The submodule's declaration (for a template specialization, the
  // template's), where a missing-traits note points.
  const clang::CXXRecordDecl* declaration = nullptr;
};

class SubmoduleTraits {
 public:
  // `sibling_includes`: the generated files of the same library's other
  // headers, as included; must outlive this object.
  SubmoduleTraits(clang::ASTContext& context, clang::Preprocessor& preprocessor,
                  const std::vector<std::string>& sibling_includes)
      : context_(context),
        preprocessor_(preprocessor),
        sibling_includes_(sibling_includes) {}

  // Find: where the traits of `submodule` come from. Each submodule
  // declaration is looked up once; later calls say kNothingToInclude.
  SubmoduleTraitsSource Find(const clang::CXXRecordDecl* submodule);

 private:
  // Whether `generated` is found as `#include "..."` from `location`.
  bool IsOnIncludePath(const std::string& generated,
                       clang::SourceLocation location) const;

  clang::ASTContext& context_;
  clang::Preprocessor& preprocessor_;
  const std::vector<std::string>& sibling_includes_;
  llvm::SmallPtrSet<const clang::Decl*, 8> looked_up_;
};

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_SUBMODULE_TRAITS_H_
