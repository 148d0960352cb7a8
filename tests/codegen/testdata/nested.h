// Modules nested in structs: inside a module, inside a plain struct, two
// levels deep, and a nested class template. Their records live in the
// namespace as <Outer>_<Inner>Record.
#ifndef KINDLING_TESTS_CODEGEN_TESTDATA_NESTED_H_
#define KINDLING_TESTS_CODEGEN_TESTDATA_NESTED_H_

#include <array>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Transformer {
  struct KINDLING_MODULE Block {
    kindling::Param<kindling::Tensor<2>> attention;
    kindling::Param<kindling::Tensor<1>> norm;
  };

  kindling::Param<kindling::Tensor<2>> embedding;
  std::vector<Block> blocks;
};

// Not a module itself: only a scope for the modules in it.
class Zoo {
 public:
  struct KINDLING_MODULE Head {
    kindling::Param<kindling::Tensor<1>> bias;
  };

  template <int N>
  struct KINDLING_MODULE Tower {
    std::array<Head, N> heads;
  };

  struct Inner {
    struct KINDLING_MODULE Cell {
      kindling::Param<kindling::Tensor<1>> gate;
    };
  };
};

struct KINDLING_MODULE UsesNested {
  Zoo::Tower<2> tower;
  Zoo::Inner::Cell cell;
  Transformer::Block block;
};

}  // namespace demo

#endif  // KINDLING_TESTS_CODEGEN_TESTDATA_NESTED_H_
