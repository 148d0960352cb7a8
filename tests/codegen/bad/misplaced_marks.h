// Marks where modules cannot be: twice, on a union, on a nested class, on a
// template specialization.
#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE KINDLING_MODULE Twice {
  kindling::Param<kindling::Tensor<1>> weight;
};

union KINDLING_MODULE Either {
  int integer;
  float real;
};

struct Outer {
  struct KINDLING_MODULE Inner {
    kindling::Param<kindling::Tensor<1>> weight;
  };
};

template <class T>
struct Holder {
  T value;
};

template <>
struct KINDLING_MODULE Holder<int> {
  kindling::Param<kindling::Tensor<1>> weight;
};

}  // namespace demo
