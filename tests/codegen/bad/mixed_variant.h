// A std::variant must hold parameters in every alternative or in none.
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
};

}  // namespace demo
