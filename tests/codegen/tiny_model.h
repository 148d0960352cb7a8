// TinyModel: modules over the real Param and Buffer, for the end-to-end test
// of kindling_module_library (generation, include path, compilation).
#ifndef KINDLING_TESTS_CODEGEN_TINY_MODEL_H_
#define KINDLING_TESTS_CODEGEN_TINY_MODEL_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/buffer.h"
#include "tests/codegen/scalar_parameter.h"

namespace kindling::codegen_test {

struct KINDLING_MODULE TinyLinear {
  Param<ScalarParameter> weight;
  std::optional<Param<ScalarParameter>> bias;
};

struct KINDLING_MODULE TinyModel {
  TinyLinear input;
  std::vector<TinyLinear> hidden;
  std::array<TinyLinear, 2> heads;
  Buffer<ScalarParameter> running_mean;
  int64_t num_classes;
  KINDLING_SKIP std::string label;
};

template <class T, int N>
struct KINDLING_MODULE TinyBlock {
  Param<T> weight;
  std::array<Param<T>, N> taps;
  int64_t repeats;
};

template <template <class...> class Sequence>
struct KINDLING_MODULE TinyChain {
  Sequence<Param<ScalarParameter>> links;
};

}  // namespace kindling::codegen_test

#endif  // KINDLING_TESTS_CODEGEN_TINY_MODEL_H_
