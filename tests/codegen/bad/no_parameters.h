// A module with nothing to save: a warning, or an error under -Werror.
#include <cstdint>
#include <string>

#include "kindling/module/annotations.h"

namespace demo {

struct KINDLING_MODULE Flatten {
  int64_t start_dim;
  KINDLING_SKIP std::string label;
};

}  // namespace demo
