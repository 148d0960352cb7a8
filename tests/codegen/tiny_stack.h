// TinyStack: a module whose submodules come from another
// kindling_module_library (tiny_model.h), so its generated file must include
// tiny_model.kindling.h.
#ifndef KINDLING_TESTS_CODEGEN_TINY_STACK_H_
#define KINDLING_TESTS_CODEGEN_TINY_STACK_H_

#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/scalar_parameter.h"
#include "tests/codegen/tiny_model.h"

namespace kindling::codegen_test {

struct KINDLING_MODULE TinyStack {
  std::vector<TinyLinear> layers;
  TinyBlock<ScalarParameter, 2> block;
};

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_TINY_STACK_H_
