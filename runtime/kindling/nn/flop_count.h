// The arithmetic of a training step's matrix-product layers, counted from
// their shapes: what a FLOP-limit yardstick divides by the machine's GEMM
// rate to get the shortest time the step could take.
//
//   nn::Flops flops = nn::LinearFlops(model.fc1, batch,
//                                     nn::InputGradient::kNotNeeded);
//   flops += nn::LinearFlops(model.fc2, batch, nn::InputGradient::kNeeded);
//   double limit_s = flops.total() / gemm_flops_per_second;
//
// Conventions (those of model-FLOP-utilization figures): a multiply-add is
// 2 FLOPs; a product [m, k] x [k, n] costs 2mkn forward, and backward 2mkn
// for the weight's gradient plus 2mkn for the input's, which a layer whose
// input needs no gradient (the first layer) does not compute. Nothing a
// backend may skip or redo is counted: no recomputation (a fused attention's
// backward recomputes its scores), no masked-out attention pairs. Element-wise
// work (bias, activations, norms, softmax, pooling, the optimizer) is not
// counted: it is memory-bound, and measured against memcpy instead.
#ifndef KINDLING_NN_FLOP_COUNT_H_
#define KINDLING_NN_FLOP_COUNT_H_

#include <array>
#include <cstdint>

#include "kindling/nn/attention.h"
#include "kindling/nn/conv2d.h"
#include "kindling/nn/linear.h"
#include "kindling/nn/transformer.h"

namespace kindling::nn {

// Flops: floating-point operations of a forward pass and of its backward.
struct Flops {
  double forward = 0;
  double backward = 0;

  double total() const { return forward + backward; }
  Flops& operator+=(const Flops& other) {
    forward += other.forward;
    backward += other.backward;
    return *this;
  }
};

// Whether backward computes the gradient of a layer's input: not for the
// first layer of a model, whose input is data.
enum class InputGradient { kNotNeeded, kNeeded };

// MatmulFlops(): a product [rows, inner] x [inner, cols] whose right operand
// is a trained weight.
Flops MatmulFlops(int64_t rows, int64_t inner, int64_t cols,
                  InputGradient input_gradient);

// LinearFlops(): `layer` applied to `rows` vectors (batch x sequence).
Flops LinearFlops(const Linear& layer, int64_t rows,
                  InputGradient input_gradient);

// Conv2dFlops(): `layer` over `batch` images of `input_size` {H, W}.
Flops Conv2dFlops(const Conv2d& layer, int64_t batch,
                  std::array<int64_t, 2> input_size,
                  InputGradient input_gradient);

// AttentionFlops(): scaled-dot-product attention of `queries` over `keys`
// in `batch` x `heads` heads of `head_dim`: the scores Q K^T and the
// weighted sum P V, for the query-key pairs a causal mask (query i sees keys
// 0..i, torch's is_causal) keeps. Backward: the gradients of V, P, Q and K.
Flops AttentionFlops(int64_t batch, int64_t heads, int64_t queries,
                     int64_t keys, int64_t head_dim, bool causal);

// MultiHeadAttentionFlops(): self-attention of `layer` over `batch`
// sequences of `length`: the input and output projections and the
// attention.
Flops MultiHeadAttentionFlops(const MultiHeadAttention& layer, int64_t batch,
                              int64_t length, bool causal);

// TransformerEncoderLayerFlops(): `layer`'s self-attention and feed-forward
// over `batch` sequences of `length`; its input needs a gradient.
Flops TransformerEncoderLayerFlops(const TransformerEncoderLayer& layer,
                                   int64_t batch, int64_t length, bool causal);

}  // namespace kindling::nn

#endif  // KINDLING_NN_FLOP_COUNT_H_
