// A plain module: parameters and one submodule, in one namespace.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_PLAIN_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_PLAIN_H_

#include <optional>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
  std::optional<kindling::Param<kindling::Tensor<1>>> bias;
};

struct KINDLING_MODULE TwoLayer {
  Linear fc1;
  Linear fc2;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_PLAIN_H_
