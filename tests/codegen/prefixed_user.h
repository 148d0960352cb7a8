// PrefixedUser: holds a module of a library with an include prefix, so its
// generated file includes "codegen_prefixed/whole.kindling.h" through that
// library's include path.
#ifndef KINDLING_TESTS_CODEGEN_PREFIXED_USER_H_
#define KINDLING_TESTS_CODEGEN_PREFIXED_USER_H_

#include <optional>

#include "codegen_prefixed/whole.h"
#include "kindling/module/annotations.h"

namespace kindling::codegen_test {

struct KINDLING_MODULE PrefixedUser {
  std::optional<PrefixedWhole> whole;
};

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_PREFIXED_USER_H_
