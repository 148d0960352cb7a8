// Fields the generated code could not read or assign, a base class holding
// parameters, and a name the generated record would collide with.
#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
};

class KINDLING_MODULE Hidden {
  Linear layer;

 public:
  const Linear frozen;
};

struct KINDLING_MODULE Derived : Linear {
  Linear extra;
};

struct KINDLING_MODULE Taken {
  Linear layer;
};

struct TakenRecord {};

}  // namespace demo
