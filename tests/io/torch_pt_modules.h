// The Kindling twin of make_torch_pt_files.py's TiedNet: torch.nn.Linear ->
// BatchNorm1d -> Linear, the decoder's weight tied to the encoder's in the
// torch model (two tensors sharing one storage in its torch.save file).
#ifndef KINDLING_TESTS_IO_TORCH_PT_MODULES_H_
#define KINDLING_TESTS_IO_TORCH_PT_MODULES_H_

#include "kindling/module/annotations.h"
#include "kindling/nn/batch_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/tensor.h"

namespace pttest {

struct KINDLING_MODULE TiedNet {
  kindling::nn::Linear encoder;
  kindling::nn::BatchNorm<2> norm;
  kindling::nn::Linear decoder;

  kindling::Tensor<2> Forward(const kindling::Tensor<2>& x) const {
    return decoder.Forward(norm.Forward(encoder.Forward(x),
                                        kindling::nn::ForwardMode::kInference));
  }
};

inline TiedNet MakeTiedNet() {
  return TiedNet{kindling::nn::LinearConfig{4, 4}.Init(),
                 kindling::nn::BatchNormConfig{4}.Init<2>(),
                 kindling::nn::LinearConfig{4, 4}.Init()};
}

}  // namespace pttest

#endif  // KINDLING_TESTS_IO_TORCH_PT_MODULES_H_
