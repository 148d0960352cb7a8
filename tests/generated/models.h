// Models using every construct kindling-gen supports; tests/generated builds
// them through kindling_module_library and checks the generated code.
#ifndef KINDLING_TESTS_GENERATED_MODELS_H_
#define KINDLING_TESTS_GENERATED_MODELS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/buffer.h"
#include "kindling/nn/batch_norm.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/tensor.h"

namespace acme::vision::models {

enum class Mode { kTrain, kEval };

// An unmarked struct without parameters: a constant.
struct HeadConfig {
  int64_t classes = 10;
  double scale = 1.0;
};

// The example.
struct KINDLING_MODULE Mlp {
  kindling::nn::Linear fc1;
  kindling::nn::Linear fc2;
  std::vector<kindling::nn::Linear> hidden;
  std::optional<kindling::nn::LayerNorm> norm;
  int64_t num_classes;              // constant: kept, copied, not saved
  KINDLING_SKIP std::string label;  // skipped
};

// Every tensor kind as a parameter, plus a buffer.
struct KINDLING_MODULE Kinds {
  kindling::Param<kindling::Tensor<2>> floats;
  kindling::Param<kindling::Tensor<1, kindling::Int>> ints;
  kindling::Param<kindling::Tensor<3, kindling::Bool>> mask;
  kindling::Buffer<kindling::Tensor<1>> steps;
};

// A class template with a type and a non-type parameter.
template <class Layer, int N>
struct KINDLING_MODULE Stack {
  std::array<Layer, N> layers;
  Mode mode = Mode::kTrain;
};

// Enum-like choice between modules.
struct KINDLING_MODULE Residual {
  kindling::nn::Linear inner;
};

struct KINDLING_MODULE Net {
  Mlp trunk;
  Stack<kindling::nn::Linear, 2> pair;
  std::variant<kindling::nn::Linear, Residual> head;
  kindling::nn::BatchNorm<2> bn;  // running statistics
  Kinds kinds;
  HeadConfig config;
};

}  // namespace acme::vision::models

#endif  // KINDLING_TESTS_GENERATED_MODELS_H_
