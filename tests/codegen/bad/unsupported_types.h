// Fields that hold parameters in ways the runtime cannot walk.
#include <list>
#include <map>
#include <memory>
#include <string>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
};

struct KINDLING_MODULE Model {
  Linear* borrowed;
  const Linear& reference;
  std::unique_ptr<Linear> owned;
  std::shared_ptr<Linear> shared;
  std::map<std::string, Linear> by_name;
  std::list<Linear> chain;
  Linear heads[2];
  kindling::Param<kindling::Tensor<1>> scales[4];
};

}  // namespace demo
