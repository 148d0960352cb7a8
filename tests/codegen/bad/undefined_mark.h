// A header that marks its structs without including
// "kindling/module/annotations.h": one error at the first mark, none of the
// errors clang would give for `struct KINDLING_MODULE Model {...}`.
#include "kindling/core/param.h"

namespace demo {

struct KINDLING_MODULE Model {
  kindling::Param<int> weight;
  KINDLING_SKIP int label;
};

struct KINDLING_MODULE Other {
  Model model;
};

}  // namespace demo
