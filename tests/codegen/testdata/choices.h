// Variants with an empty alternative (std::monostate), tuples and pairs of
// parameters and submodules, and a class template over a pack of submodules.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_CHOICES_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_CHOICES_H_

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Gate {
  kindling::Param<kindling::Tensor<1>> weight;
};

struct KINDLING_MODULE Expert {
  kindling::Param<kindling::Tensor<2>> up;
  kindling::Param<kindling::Tensor<2>> down;
};

struct KINDLING_MODULE Router {
  std::variant<std::monostate, Gate, Expert> route;
  std::tuple<Gate, kindling::Param<kindling::Tensor<1>>, int64_t> parts;
  std::pair<kindling::Param<kindling::Tensor<2>>, std::vector<Gate>> pair;
  std::optional<std::tuple<Expert>> spare;
  std::variant<std::monostate, int64_t> setting;
};

template <class... Experts>
struct KINDLING_MODULE Mixture {
  std::tuple<Experts...> experts;
  std::variant<std::monostate, Experts...> active;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_CHOICES_H_
