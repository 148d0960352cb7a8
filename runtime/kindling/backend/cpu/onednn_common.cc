#include "kindling/backend/cpu/onednn_common.h"

#include <cstdlib>
#include <cstring>

namespace kindling::cpu {

OneDnnMode GetOneDnnMode() {
  static const OneDnnMode mode = [] {
    const char* value = std::getenv("KINDLING_ONEDNN");
    if (value != nullptr && std::strcmp(value, "0") == 0) {
      return OneDnnMode::kOff;
    }
    if (value != nullptr && std::strcmp(value, "all") == 0) {
      return OneDnnMode::kAll;
    }
    return OneDnnMode::kMeasured;
  }();
  return mode;
}

dnnl::engine& OneDnnEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::primitive_attr OneDnnUserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace kindling::cpu
