// PrefixedWhole: holds a module from another header of the same library,
// included through the library's prefix.
#ifndef KINDLING_TESTS_CODEGEN_PREFIXED_WHOLE_H_
#define KINDLING_TESTS_CODEGEN_PREFIXED_WHOLE_H_

#include <vector>

#include "codegen_prefixed/part.h"
#include "kindling/module/annotations.h"

namespace kindling::codegen_test {

struct KINDLING_MODULE PrefixedWhole {
  std::vector<PrefixedPart> parts;
};

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_PREFIXED_WHOLE_H_
