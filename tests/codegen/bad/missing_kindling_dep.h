// A Kindling header that the library's deps do not provide: clang's error,
// then a note naming the target to add; nothing cascades.
#include "kindling/module/annotations.h"
#include "kindling/nn/linear.h"

namespace demo {

struct KINDLING_MODULE Model {
  kindling::nn::Linear fc;
};

}  // namespace demo
