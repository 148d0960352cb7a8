// Structs that hold parameters but lack KINDLING_MODULE.
#include <optional>
#include <vector>

#include "kindling/module/annotations.h"
#include "tests/codegen/testdata/leaves.h"

namespace demo {

struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
};

struct Encoder {
  Linear layer;
};

template <class T>
struct Wrapper {
  kindling::Param<T> value;
};

struct Config {
  int width;
};

struct KINDLING_MODULE Model {
  Encoder encoder;
  std::vector<std::optional<Encoder>> encoders;
  Wrapper<kindling::Tensor<1>> wrapped;
  Config config;
};

}  // namespace demo
