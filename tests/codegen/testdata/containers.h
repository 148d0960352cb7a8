// Submodules and parameters in std::vector, std::array, std::optional and
// std::variant, nested too.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_CONTAINERS_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_CONTAINERS_H_

#include <array>
#include <optional>
#include <variant>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Dense {
  kindling::Param<kindling::Tensor<2>> weight;
};

struct KINDLING_MODULE Conv {
  kindling::Param<kindling::Tensor<4>> kernel;
};

struct KINDLING_MODULE Stack {
  std::vector<Dense> layers;
  std::array<Dense, 3> heads;
  std::optional<Dense> projection;
  std::variant<Dense, Conv> stem;
  std::vector<std::optional<Conv>> maybe_convs;
  std::array<kindling::Param<kindling::Tensor<1>>, 2> scales;
  std::vector<int> layer_sizes;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_CONTAINERS_H_
