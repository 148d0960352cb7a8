// Test modules for the optimizer tests (kindling-gen writes their traits into
// optim_test_modules.kindling.h).
#ifndef KINDLING_TESTS_OPTIM_OPTIM_TEST_MODULES_H_
#define KINDLING_TESTS_OPTIM_OPTIM_TEST_MODULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/module/annotations.h"
#include "kindling/tensor/tensor.h"

namespace optimtest {

using kindling::Param;
using kindling::Tensor;

// One vector parameter: what the PyTorch trajectories are run on.
struct KINDLING_MODULE Vector {
  Param<Tensor<1>> weight;
};

// Vector with its field renamed, to test state following a renamed field.
struct KINDLING_MODULE RenamedVector {
  Param<Tensor<1>> w;
};

struct KINDLING_MODULE Linear {
  Param<Tensor<2>> weight;
  std::optional<Param<Tensor<1>>> bias;
};

struct KINDLING_MODULE Norm {
  Param<Tensor<1>> gamma;
};

struct KINDLING_MODULE Net {
  Linear fc1;
  Norm norm;
  Linear fc2;
};

// An embedding shared by the encoder and the decoder (one Param state in two
// fields) plus a frozen projection.
struct KINDLING_MODULE Tied {
  Param<Tensor<2>> encoder_embed;
  Param<Tensor<2>> decoder_embed;
  Param<Tensor<2>> frozen;
};

// ParamFrom() wraps data as an initialized, trainable Param.
template <int D>
Param<Tensor<D>> ParamFrom(std::vector<float> data, kindling::Shape shape) {
  return Param<Tensor<D>>::Initialized(
      kindling::ParamId::New(),
      Tensor<D>::FromData(data, shape).set_require_grad(true));
}

// Ramp() is `count` distinct values around `center`.
inline std::vector<float> Ramp(int64_t count, float center, float step = 0.1f) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = center + step * static_cast<float>(i - count / 2);
  }
  return values;
}

inline Net MakeNet() {
  return Net{Linear{ParamFrom<2>(Ramp(12, 0.3f), {3, 4}),
                    ParamFrom<1>(Ramp(4, -0.1f), {4})},
             Norm{ParamFrom<1>(Ramp(4, 1.0f), {4})},
             Linear{ParamFrom<2>(Ramp(8, -0.2f), {4, 2}),
                    ParamFrom<1>(Ramp(2, 0.05f), {2})}};
}

}  // namespace optimtest

#endif  // KINDLING_TESTS_OPTIM_OPTIM_TEST_MODULES_H_
