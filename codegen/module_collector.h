// CollectModules: finds the KINDLING_MODULE structs of a parsed header and
// reads their fields into the model the emitter writes out.
//
// Only definitions written in the main file count: a marked struct from an
// included header gets its traits from that header's own generated file, which
// the generated file includes (or from a hand-written ModuleTraits
// specialization that is already visible).
// Every user mistake (an unsupported field type, a struct holding parameters
// without the mark, a misplaced or repeated mark) is reported through the
// compiler's DiagnosticsEngine at the user's source location, so it prints as
// `file:line:col: error: ...` and never as an error inside generated code.
#ifndef KINDLING_CODEGEN_MODULE_COLLECTOR_H_
#define KINDLING_CODEGEN_MODULE_COLLECTOR_H_

#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Lex/Preprocessor.h"
#include "codegen/module_model.h"

namespace kindling::codegen {

// CollectModules: fills `header.modules` with the modules defined in the main
// file of `context`, in declaration order, and `header.submodule_includes`
// with the generated files that give the traits of their submodules from
// other headers: those found on the include path of `preprocessor`, and those
// in `sibling_includes` (generated from the same library's other headers, so
// written by other build actions; taken as given). When it reports an error
// through `diagnostics`, the result is incomplete and must not be emitted.
void CollectModules(clang::ASTContext& context,
                    clang::Preprocessor& preprocessor,
                    clang::DiagnosticsEngine& diagnostics,
                    const std::vector<std::string>& sibling_includes,
                    GeneratedHeader& header);

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_MODULE_COLLECTOR_H_
