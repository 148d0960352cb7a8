// Test modules for the checkpoint tests (kindling-gen writes their traits and
// records into record_test_modules.kindling.h). Their fields are named like
// runtime/nn's layers so that the same keys, and the PyTorch adapter's rules,
// apply.
#ifndef KINDLING_TESTS_RECORD_RECORD_TEST_MODULES_H_
#define KINDLING_TESTS_RECORD_RECORD_TEST_MODULES_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/module/annotations.h"
#include "kindling/module/buffer.h"
#include "kindling/tensor/tensor.h"

namespace rectest {

using kindling::Device;
using kindling::Param;
using kindling::Shape;
using kindling::Tensor;

// Counts init-function runs across all lazy test params.
inline std::atomic<int> init_runs{0};

// A lazy Param<Tensor<D>> of `shape` whose init fills `value` and counts.
template <int D>
Param<Tensor<D>> LazyParam(Shape shape, float value = 0.5f) {
  return Param<Tensor<D>>::Uninitialized(
      kindling::ParamId::New(),
      [shape, value](const Device& device, bool require_grad) {
        ++init_runs;
        return Tensor<D>::Full(shape, value, device)
            .set_require_grad(require_grad);
      },
      Device::Cpu(), /*require_grad=*/true, shape);
}

// [d_input, d_output] weight, like kindling::nn::Linear.
struct KINDLING_MODULE Linear {
  Param<Tensor<2>> weight;
  std::optional<Param<Tensor<1>>> bias;
};

struct KINDLING_MODULE LayerNorm {
  Param<Tensor<1>> gamma;
  Param<Tensor<1>> beta;
  double epsilon = 1e-5;
};

struct KINDLING_MODULE Block {
  Linear fc;
  LayerNorm norm;
};

struct KINDLING_MODULE Net {
  Linear input;
  std::vector<Block> blocks;
  kindling::Buffer<Tensor<1>> steps;
};

// Hugging Face's names for a BERT attention block, through KINDLING_KEY.
struct KINDLING_MODULE AttentionOutput {
  Linear dense;
  KINDLING_KEY("LayerNorm") LayerNorm layer_norm;
};

struct KINDLING_MODULE Attention {
  KINDLING_KEY("self") Linear self_attention;
  AttentionOutput output;
};

inline Linear MakeLinear(int64_t in, int64_t out, bool bias = true) {
  Linear linear{LazyParam<2>({in, out}), std::nullopt};
  if (bias) linear.bias = LazyParam<1>({out});
  return linear;
}

inline LayerNorm MakeLayerNorm(int64_t d) {
  return LayerNorm{LazyParam<1>({d}, 1.0f), LazyParam<1>({d}, 0.0f)};
}

inline Net MakeNet(int64_t width = 4, int blocks = 2) {
  Net net{MakeLinear(3, width),
          {},
          kindling::Buffer<Tensor<1>>(LazyParam<1>({1}, 0.0f))};
  for (int i = 0; i < blocks; ++i) {
    net.blocks.push_back(Block{MakeLinear(width, width), MakeLayerNorm(width)});
  }
  return net;
}

}  // namespace rectest

#endif  // KINDLING_TESTS_RECORD_RECORD_TEST_MODULES_H_
