// Module class templates: type, non-type, pack, constrained and template
// template parameters, and a specialization of a template used as a submodule.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_TEMPLATES_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_TEMPLATES_H_

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

template <class T, int N>
struct KINDLING_MODULE Block {
  kindling::Param<T> weight;
  std::array<kindling::Param<T>, N> taps;
  T extra;
  std::vector<T> more;
  int64_t repeats;
};

template <std::copyable T, std::size_t... Ranks>
struct KINDLING_MODULE Bank {
  std::tuple<kindling::Param<kindling::Tensor<Ranks>>...> tensors;
  T scale;
};

template <template <class...> class Sequence, class T>
struct KINDLING_MODULE Chain {
  Sequence<kindling::Param<T>> links;
};

struct KINDLING_MODULE UsesBlock {
  Block<kindling::Tensor<2>, 4> block;
  std::vector<Block<kindling::Tensor<1>, 2>> blocks;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_TEMPLATES_H_
