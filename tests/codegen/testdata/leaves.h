// The leaves the golden-test modules hold: the real kindling::Param,
// kindling::Buffer and kindling::Tensor, so the generated code is compiled and
// exercised too (testdata_module_test.cc), not only compared as text.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_

#include "kindling/core/param.h"     // IWYU pragma: export
#include "kindling/module/buffer.h"  // IWYU pragma: export
#include "kindling/tensor/tensor.h"  // IWYU pragma: export

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_LEAVES_H_
