// A std::variant must hold parameters in every alternative or in none;
// std::monostate is the empty alternative and may stand beside either.
#include <string>
#include <variant>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
};

struct KINDLING_MODULE Model {
  std::variant<Linear, std::string> head;
  std::variant<int, std::string> fine;
  std::variant<std::monostate, Linear> also_fine;
  std::variant<std::monostate, int> constant;
};

}  // namespace demo
