#include "kindling/nn/flop_count.h"

#include <algorithm>

namespace kindling::nn {

Flops MatmulFlops(int64_t rows, int64_t inner, int64_t cols,
                  InputGradient input_gradient) {
  const double product = 2.0 * rows * inner * cols;
  const double input = input_gradient == InputGradient::kNeeded ? product : 0;
  return {.forward = product, .backward = product + input};
}

Flops LinearFlops(const Linear& layer, int64_t rows,
                  InputGradient input_gradient) {
  const Shape weight = layer.weight.lazy_shape();  // [d_input, d_output]
  return MatmulFlops(rows, weight[0], weight[1], input_gradient);
}

Flops Conv2dFlops(const Conv2d& layer, int64_t batch,
                  std::array<int64_t, 2> input_size,
                  InputGradient input_gradient) {
  const Shape weight = layer.weight.lazy_shape();  // [out, in, KH, KW]
  const int64_t positions = layer.window.OutputSize(0, input_size[0]) *
                            layer.window.OutputSize(1, input_size[1]);
  return MatmulFlops(batch * positions, weight[1] * weight[2] * weight[3],
                     weight[0], input_gradient);
}

Flops AttentionFlops(int64_t batch, int64_t heads, int64_t queries,
                     int64_t keys, int64_t head_dim, bool causal) {
  double pairs = static_cast<double>(queries) * keys;
  if (causal) {
    pairs = 0;
    for (int64_t i = 0; i < queries; ++i) pairs += std::min(keys, i + 1);
  }
  // Q K^T and P V: one multiply-add per pair and channel each.
  const double forward = 2 * (2.0 * batch * heads * pairs * head_dim);
  return {.forward = forward, .backward = 2 * forward};
}

Flops MultiHeadAttentionFlops(const MultiHeadAttention& layer, int64_t batch,
                              int64_t length, bool causal) {
  const Shape in_proj = layer.in_proj_weight.lazy_shape();  // [3 E, E]
  const int64_t rows = batch * length;
  Flops flops =
      MatmulFlops(rows, in_proj[1], in_proj[0], InputGradient::kNeeded);
  flops += AttentionFlops(batch, layer.num_heads, length, length,
                          in_proj[1] / layer.num_heads, causal);
  flops += LinearFlops(layer.out_proj, rows, InputGradient::kNeeded);
  return flops;
}

Flops TransformerEncoderLayerFlops(const TransformerEncoderLayer& layer,
                                   int64_t batch, int64_t length, bool causal) {
  const int64_t rows = batch * length;
  Flops flops = MultiHeadAttentionFlops(layer.self_attn, batch, length, causal);
  flops += LinearFlops(layer.linear1, rows, InputGradient::kNeeded);
  flops += LinearFlops(layer.linear2, rows, InputGradient::kNeeded);
  return flops;
}

}  // namespace kindling::nn
