// A submodule from a header whose module code was never generated.
#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/plain.h"

namespace demo {

struct KINDLING_MODULE Wrapper {
  Linear inner;
};

}  // namespace demo
