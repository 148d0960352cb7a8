// InstallParseChecks: user mistakes caught while the header is parsed, each
// reported once at the user's line, before clang's own errors can cascade.
//
//   - KINDLING_MODULE or KINDLING_SKIP where nothing defined it (the header
//     does not include "kindling/module/annotations.h"): clang would read
//     `struct KINDLING_MODULE Mlp {...}` as a variable of an incomplete type
//     and report every field as an error; the generator reports the missing
//     include instead.
//   - an #include that is not found: clang's error plus a note saying that
//     the generator sees the headers of the library's deps, naming the target
//     to add for a Kindling header.
//
// After either, the rest of the parse reports nothing: every later error would
// follow from the first (what a fatal error does, but printed as `error:`).
#ifndef KINDLING_CODEGEN_PARSE_CHECKS_H_
#define KINDLING_CODEGEN_PARSE_CHECKS_H_

#include "clang/Basic/Diagnostic.h"
#include "clang/Lex/Preprocessor.h"
#include "codegen/diagnostics.h"

namespace kindling::codegen {

// InstallParseChecks: registers the checks with `preprocessor` before the
// parse starts. `diagnostics` reports through `engine`; both must outlive the
// parse.
void InstallParseChecks(clang::Preprocessor& preprocessor,
                        Diagnostics& diagnostics,
                        clang::DiagnosticsEngine& engine);

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_PARSE_CHECKS_H_
