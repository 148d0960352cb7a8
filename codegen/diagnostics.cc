#include "codegen/diagnostics.h"

#include <cstddef>

#include "clang/Basic/SourceManager.h"

namespace kindling::codegen {
namespace {

using Level = clang::DiagnosticsEngine::Level;

// Severity: a diagnostic's level before -Werror; the names diagnostics.def
// uses.
enum class Severity { Error, Warning, Note };

struct DiagnosticText {
  Severity severity;
  const char* format;
};

// Every text kindling-gen prints, indexed by Diagnostic.
constexpr DiagnosticText kTexts[] = {
#define KINDLING_DIAGNOSTIC(name, severity, format) \
  {Severity::severity, format},
#include "codegen/diagnostics.def"
#undef KINDLING_DIAGNOSTIC
};

}  // namespace

Diagnostics::Diagnostics(clang::DiagnosticsEngine& engine)
    : engine_(engine), warnings_enabled_(!engine.getIgnoreAllWarnings()) {
  const Level warning =
      engine.getWarningsAsErrors() ? Level::Error : Level::Warning;
  for (size_t i = 0; i < kNumDiagnostics; ++i) {
    const DiagnosticText& text = kTexts[i];
    Level level = Level::Note;
    switch (text.severity) {
      case Severity::Error:
        level = Level::Error;
        break;
      case Severity::Warning:
        level = warning;
        break;
      case Severity::Note:
        level = Level::Note;
        break;
    }
    // The engine's own getCustomDiagID() takes only string literals.
    ids_[i] = engine.getDiagnosticIDs()->getCustomDiagID(
        static_cast<clang::DiagnosticIDs::Level>(level), text.format);
  }
}

clang::DiagnosticBuilder Diagnostics::Report(clang::SourceLocation location,
                                             Diagnostic diagnostic) {
  if (location.isValid() && engine_.hasSourceManager()) {
    location = engine_.getSourceManager().getExpansionLoc(location);
  }
  return engine_.Report(location, ids_[static_cast<size_t>(diagnostic)]);
}

}  // namespace kindling::codegen
