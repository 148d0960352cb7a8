// ScalarParameter: the smallest kindling::Parameter, for the codegen tests.
//
// runtime/codegen's compile test needs real Param and Buffer fields without
// tensors; a ScalarParameter is one float with a device id and a require-grad
// flag.
#ifndef KINDLING_TESTS_CODEGEN_SCALAR_PARAMETER_H_
#define KINDLING_TESTS_CODEGEN_SCALAR_PARAMETER_H_

#include <cstdint>
#include <vector>

#include "kindling/core/parameter.h"

namespace kindling::codegen_test {

struct ScalarParameter {
  using DeviceType = int;
  using ShapeType = std::vector<int64_t>;

  float value = 0.0f;
  DeviceType device_id = 0;
  bool require_grad = true;

  DeviceType device() const { return device_id; }
  ShapeType shape() const { return {}; }
  bool is_require_grad() const { return require_grad; }
  ScalarParameter set_require_grad(bool new_require_grad) const {
    ScalarParameter result = *this;
    result.require_grad = new_require_grad;
    return result;
  }
};

static_assert(Parameter<ScalarParameter>);

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_SCALAR_PARAMETER_H_
