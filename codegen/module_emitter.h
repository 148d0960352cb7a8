// EmitHeader: the text of a generated `<header>.kindling.h`.
//
// For each module the file defines `<Name>Record` in the module's namespace
// and specializes kindling::ModuleTraits with the module's fields, in the shape
// runtime/kindling/module/module_traits.h documents. The text is run through
// clang-format with the project's style, so the output reads like code a
// person wrote and is stable byte for byte (the golden tests compare it).
#ifndef KINDLING_CODEGEN_MODULE_EMITTER_H_
#define KINDLING_CODEGEN_MODULE_EMITTER_H_

#include <string>

#include "codegen/module_model.h"

namespace kindling::codegen {

// EmitHeader: the formatted contents of the generated file for `header`.
std::string EmitHeader(const GeneratedHeader& header);

}  // namespace kindling::codegen

#endif  // KINDLING_CODEGEN_MODULE_EMITTER_H_
