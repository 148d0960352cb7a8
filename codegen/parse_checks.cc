#include "codegen/parse_checks.h"

#include <memory>
#include <string>

#include "clang/Basic/DiagnosticLex.h"
#include "clang/Basic/IdentifierTable.h"
#include "clang/Basic/TokenKinds.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Token.h"
#include "llvm/ADT/StringRef.h"

namespace kindling::codegen {
namespace {

// Where Kindling's headers are included from: "kindling/<layer>/<file>.h".
constexpr llvm::StringRef kKindlingIncludePrefix = "kindling/";

// Notes each #include that is not found. The error itself is clang's.
class IncludeNotFound : public clang::PPCallbacks {
 public:
  IncludeNotFound(Diagnostics& diagnostics, clang::DiagnosticsEngine& engine)
      : diagnostics_(diagnostics), engine_(engine) {}

  void InclusionDirective(clang::SourceLocation /*hash_location*/,
                          const clang::Token& /*include_token*/,
                          llvm::StringRef file_name, bool /*is_angled*/,
                          clang::CharSourceRange file_name_range,
                          const clang::FileEntry* file,
                          llvm::StringRef /*search_path*/,
                          llvm::StringRef /*relative_path*/,
                          const clang::Module* /*imported*/,
                          clang::SrcMgr::CharacteristicKind) override {
    if (file != nullptr || engine_.getSuppressAllDiagnostics()) return;
    const clang::SourceLocation location = file_name_range.getBegin();
    if (file_name.startswith(kKindlingIncludePrefix)) {
      // kindling/nn/linear.h -> nn; kindling/backend/cpu/x.h -> backend/cpu.
      const llvm::StringRef layer =
          file_name.drop_front(kKindlingIncludePrefix.size()).rsplit('/').first;
      diagnostics_.Report(location, Diagnostic::kAddKindlingDep) << layer;
    } else {
      diagnostics_.Report(location, Diagnostic::kAddDep) << file_name;
    }
    engine_.setSuppressAllDiagnostics(true);
  }

 private:
  Diagnostics& diagnostics_;
  clang::DiagnosticsEngine& engine_;
};

}  // namespace

void InstallParseChecks(clang::Preprocessor& preprocessor,
                        Diagnostics& diagnostics,
                        clang::DiagnosticsEngine& engine) {
  // A missing include is fatal in clang, which silences everything after it,
  // the note included. As an error it lets the note through; the callback
  // silences the rest itself.
  engine.setSeverity(clang::diag::err_pp_file_not_found,
                     clang::diag::Severity::Error, clang::SourceLocation());
  preprocessor.addPPCallbacks(
      std::make_unique<IncludeNotFound>(diagnostics, engine));

  // A defined mark expands to an attribute, so the parser only ever receives
  // the identifier itself when no header defined it.
  const clang::IdentifierInfo* module_mark =
      preprocessor.getIdentifierInfo("KINDLING_MODULE");
  const clang::IdentifierInfo* skip_mark =
      preprocessor.getIdentifierInfo("KINDLING_SKIP");
  const clang::IdentifierInfo* key_mark =
      preprocessor.getIdentifierInfo("KINDLING_KEY");
  preprocessor.setTokenWatcher([&diagnostics, &engine, module_mark, skip_mark,
                                key_mark](const clang::Token& token) {
    if (!token.is(clang::tok::identifier)) return;
    const clang::IdentifierInfo* name = token.getIdentifierInfo();
    if (name != module_mark && name != skip_mark && name != key_mark) return;
    if (engine.getSuppressAllDiagnostics()) return;
    diagnostics.Report(token.getLocation(), Diagnostic::kUndefinedMark)
        << name->getName();
    engine.setSuppressAllDiagnostics(true);
  });
}

}  // namespace kindling::codegen
