// Marks where modules cannot be: twice, on a union, on a template
// specialization. (Nested classes: nested_modules.h.)
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

template <class T>
struct Holder {
  T value;
};

template <>
struct KINDLING_MODULE Holder<int> {
  kindling::Param<kindling::Tensor<1>> weight;
};

}  // namespace demo
