// PrefixedPart: a module in a kindling_module_library with include_prefix and
// strip_include_prefix, included as "codegen_prefixed/part.h".
#ifndef KINDLING_TESTS_CODEGEN_PREFIXED_PART_H_
#define KINDLING_TESTS_CODEGEN_PREFIXED_PART_H_

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "tests/codegen/scalar_parameter.h"

namespace kindling::codegen_test {

struct KINDLING_MODULE PrefixedPart {
  Param<ScalarParameter> weight;
};

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_PREFIXED_PART_H_
