// TransformerEncoderLayer: a pre-norm transformer block (GPT-2's layout,
// torch.nn.TransformerEncoderLayer with norm_first=True, batch_first=True):
//
//   x = x + dropout(self_attn(norm1(x)))
//   x = x + dropout(linear2(dropout(gelu(linear1(norm2(x))))))
//
// With AttentionOptions::causal it is a decoder-only (GPT) block. Its field
// names are torch's, so the layer's state_dict loads through the PyTorch
// adapter.
//
//   auto block = kindling::nn::TransformerEncoderLayerConfig{
//       .d_model = 128, .num_heads = 4, .d_feedforward = 512}.Init();
//   Tensor<3> y = block.Forward(x, {.causal = true});  // x: [B, T, 128]
#ifndef KINDLING_NN_TRANSFORMER_H_
#define KINDLING_NN_TRANSFORMER_H_

#include <cstdint>

#include "kindling/core/check.h"
#include "kindling/module/annotations.h"
#include "kindling/nn/attention.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

struct KINDLING_MODULE TransformerEncoderLayer {
  MultiHeadAttention self_attn;
  Linear linear1;  // d_model -> d_feedforward
  Linear linear2;  // d_feedforward -> d_model
  LayerNorm norm1;
  LayerNorm norm2;
  // dropout: on the attention weights (self_attn's own), after the
  // feed-forward activation and on both residual branches, as torch's.
  double dropout = 0;

  // Forward(): [B, T, d_model] -> same shape. `options` are the attention's
  // (masks, mode, generator); dropout applies only in kTraining and then
  // needs options.rng (checked).
  Tensor<3> Forward(const Tensor<3>& x,
                    const AttentionOptions& options = {}) const {
    const Tensor<3> attended =
        Drop(self_attn.Forward(norm1.Forward(x), options), options);
    const Tensor<3> h = x + attended;
    const Tensor<3> hidden =
        Drop(linear1.Forward(norm2.Forward(h)).gelu(), options);
    return h + Drop(linear2.Forward(hidden), options);
  }

 private:
  Tensor<3> Drop(const Tensor<3>& x, const AttentionOptions& options) const {
    if (options.mode != ForwardMode::kTraining || dropout == 0) return x;
    KINDLING_CHECK(options.rng != nullptr,
                   "TransformerEncoderLayer: dropout %g in training mode "
                   "needs AttentionOptions::rng",
                   dropout);
    const uint64_t offset = ops::ReserveDropoutBlocks(*options.rng, x.base());
    return Tensor<3>(
        ops::Dropout(x.base(), dropout, options.rng->seed(), offset));
  }
};

struct TransformerEncoderLayerConfig {
  int64_t d_model;
  int64_t num_heads;
  int64_t d_feedforward;
  double dropout = 0;
  double layer_norm_epsilon = 1e-5;

  TransformerEncoderLayer Init(const Device& device = Device::Cpu()) const {
    return TransformerEncoderLayer{
        MultiHeadAttentionConfig{d_model, num_heads, dropout}.Init(device),
        LinearConfig{d_model, d_feedforward}.Init(device),
        LinearConfig{d_feedforward, d_model}.Init(device),
        LayerNormConfig{d_model, layer_norm_epsilon}.Init(device),
        LayerNormConfig{d_model, layer_norm_epsilon}.Init(device),
        dropout};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_TRANSFORMER_H_
