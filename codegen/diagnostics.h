// Diagnostics: every error, warning and note kindling-gen reports, and the one
// way to report them.
//
// Each diagnostic is registered once per run with clang's DiagnosticsEngine
// and reported at a SourceLocation in the user's header, so it prints like a
// compiler diagnostic (`file:line:col: error: ...`, lowercase, no final
// period, `%0` arguments formatted by clang) and never points into generated
// code. The texts live in one table, codegen/diagnostics.def, so reviewing
// what users read means reading one list.
#ifndef KINDLING_CODEGEN_DIAGNOSTICS_H_
#define KINDLING_CODEGEN_DIAGNOSTICS_H_

#include <array>
#include <cstddef>

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceLocation.h"

namespace kindling::codegen {

// Diagnostic: what went wrong; one enumerator per line of
// codegen/diagnostics.def, which also holds each one's text.
enum class Diagnostic {
#define KINDLING_DIAGNOSTIC(name, severity, format) k##name,
#include "codegen/diagnostics.def"
#undef KINDLING_DIAGNOSTIC
};

inline constexpr size_t kNumDiagnostics = 0
#define KINDLING_DIAGNOSTIC(name, severity, format) +1
#include "codegen/diagnostics.def"
#undef KINDLING_DIAGNOSTIC
    ;

class Diagnostics {
 public:
  // Registers every diagnostic with `engine`. kindling-gen's warnings are
  // custom ones, which clang's -Werror and -w do not reach, so both are
  // applied here from the engine's settings.
  explicit Diagnostics(clang::DiagnosticsEngine& engine);

  // Report: starts `diagnostic` at `location`; stream its %0, %1, ...
  // arguments into the result. Inside a macro, it reports at the expansion:
  // the place the user wrote.
  clang::DiagnosticBuilder Report(clang::SourceLocation location,
                                  Diagnostic diagnostic);

  // WarningsEnabled: false under -w, so callers can skip work for warnings.
  bool WarningsEnabled() const { return warnings_enabled_; }

  // NumErrors: errors reported so far (by clang too).
  unsigned NumErrors() const { return engine_.getNumErrors(); }

 private:
  clang::DiagnosticsEngine& engine_;
  bool warnings_enabled_;
  std::array<unsigned, kNumDiagnostics> ids_;
};

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_DIAGNOSTICS_H_
