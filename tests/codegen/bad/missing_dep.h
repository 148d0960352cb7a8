// A header of the user's own that the library's deps do not provide.
#include "kindling/module/annotations.h"
#include "models/encoder.h"

namespace demo {

struct KINDLING_MODULE Model {
  models::Encoder encoder;
};

}  // namespace demo
