// KINDLING_KEY mistakes: a key that is not one path component, and two
// fields that would be saved under one name.
#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Keys {
  KINDLING_KEY("encoder.dense") kindling::Param<kindling::Tensor<2>> dense;
  KINDLING_KEY("") kindling::Param<kindling::Tensor<1>> empty;
  kindling::Param<kindling::Tensor<1>> bias;
  KINDLING_KEY("bias") kindling::Param<kindling::Tensor<1>> offset;
};

}  // namespace demo
