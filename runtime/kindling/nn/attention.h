// Attention: scaled dot-product attention and MultiHeadAttention in
// PyTorch's parameterization (torch.nn.MultiheadAttention with
// batch_first=True), so its state_dict loads through the PyTorch adapter.
//
//   auto attention = kindling::nn::MultiHeadAttentionConfig{
//       .d_model = 128, .num_heads = 4, .dropout = 0.1}.Init();
//   kindling::PhiloxGenerator rng(1);
//   Tensor<3> y = attention.Forward(x, {.causal = true,
//                                       .mode = ForwardMode::kTraining,
//                                       .rng = &rng});  // x: [B, T, 128]
//
// Without dropout, attention runs as one fused op (fused_attention.h) that
// never materializes the [B, H, T, S] weights; with dropout in training, or
// where no fused kernel exists, it is composed of tensor ops (matmuls, a
// masked softmax, dropout).
#ifndef KINDLING_NN_ATTENTION_H_
#define KINDLING_NN_ATTENTION_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/fused_attention.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// AttentionOptions: masks and mode of one attention call.
struct AttentionOptions {
  // causal: query i attends to keys 0..i only (torch's is_causal; with more
  // keys than queries, the top-left alignment of a lower-triangular mask).
  bool causal = false;
  // key_padding_mask: Bool [B, S], true where a key is padding and must be
  // ignored (torch's key_padding_mask). A query whose keys are all masked
  // gets NaN, as in torch.
  std::optional<Tensor<2, Bool>> key_padding_mask{};
  // mode: dropout on the attention weights applies only in kTraining.
  ForwardMode mode = ForwardMode::kInference;
  // rng: the generator dropout draws from. REQUIRED in kTraining when the
  // layer's dropout is above 0 (checked).
  PhiloxGenerator* rng = nullptr;
};

// CheckAttentionShapes() aborts unless q [B, H, T, Dh], k [B, H, S, Dh],
// v [B, H, S, Dv] and the key padding mask [B, S] fit together.
inline void CheckAttentionShapes(const Tensor<4>& q, const Tensor<4>& k,
                                 const Tensor<4>& v,
                                 const AttentionOptions& options) {
  KINDLING_CHECK(
      q.dim(0) == k.dim(0) && q.dim(1) == k.dim(1) && q.dim(3) == k.dim(3) &&
          k.dim(0) == v.dim(0) && k.dim(1) == v.dim(1) && k.dim(2) == v.dim(2),
      "ScaledDotProductAttention: q %s, k %s and v %s do not fit "
      "([B, H, T, Dh], [B, H, S, Dh], [B, H, S, Dv])",
      q.shape().ToString(), k.shape().ToString(), v.shape().ToString());
  if (options.key_padding_mask.has_value()) {
    const Tensor<2, Bool>& padding = *options.key_padding_mask;
    KINDLING_CHECK(padding.dim(0) == k.dim(0) && padding.dim(1) == k.dim(2),
                   "attention: key_padding_mask %s, but the keys are [B=%d, "
                   "S=%d]",
                   padding.shape().ToString(), k.dim(0), k.dim(2));
  }
}

// ComposedAttention(): ScaledDotProductAttention as tensor ops, which
// materialize the [B, H, T, S] weights; the path for dropout in training
// and for devices and dtypes without a fused kernel.
inline Tensor<4> ComposedAttention(const Tensor<4>& q, const Tensor<4>& k,
                                   const Tensor<4>& v,
                                   const AttentionOptions& options,
                                   double dropout = 0) {
  CheckAttentionShapes(q, k, v, options);
  const int64_t batch = q.dim(0), queries = q.dim(2), keys = k.dim(2);
  constexpr double kMasked = -std::numeric_limits<double>::infinity();
  Tensor<4> scores = matmul(q, k.transpose(2, 3)) *
                     (1.0 / std::sqrt(static_cast<double>(q.dim(3))));
  if (options.causal) {
    const Tensor<2> rows =
        Tensor<1>::Arange(0, queries, 1, q.device()).unsqueeze(1);
    const Tensor<2> cols =
        Tensor<1>::Arange(0, keys, 1, q.device()).unsqueeze(0);
    scores = scores.mask_fill(greater(cols, rows), kMasked);
  }
  if (options.key_padding_mask.has_value()) {
    scores = scores.mask_fill(options.key_padding_mask->to_device(q.device())
                                  .reshape<4>({batch, 1, 1, keys}),
                              kMasked);
  }
  Tensor<4> weights = scores.softmax(3);
  if (options.mode == ForwardMode::kTraining && dropout > 0) {
    KINDLING_CHECK(options.rng != nullptr,
                   "attention: dropout %g in training mode needs "
                   "AttentionOptions::rng",
                   dropout);
    const uint64_t offset =
        ops::ReserveDropoutBlocks(*options.rng, weights.base());
    weights = Tensor<4>(
        ops::Dropout(weights.base(), dropout, options.rng->seed(), offset));
  }
  return matmul(weights, v);
}

// ScaledDotProductAttention(): softmax(q k^T / sqrt(Dh) + masks) v, with
// dropout `dropout` on the weights in training mode.
// q [B, H, T, Dh], k [B, H, S, Dh], v [B, H, S, Dv] -> [B, H, T, Dv].
// Without dropout it runs the fused kernel (fused_attention.h: O(T) memory
// per head, forward and backward) where the device has one for the dtype
// (the CPU, f32 and f64), and composes tensor ops otherwise.
inline Tensor<4> ScaledDotProductAttention(const Tensor<4>& q,
                                           const Tensor<4>& k,
                                           const Tensor<4>& v,
                                           const AttentionOptions& options,
                                           double dropout = 0) {
  CheckAttentionShapes(q, k, v, options);
  const bool drops = options.mode == ForwardMode::kTraining && dropout > 0;
  if (!drops) {
    const TensorBase padding =
        options.key_padding_mask.has_value()
            ? options.key_padding_mask->to_device(q.device())
                  .contiguous()
                  .base()
            : TensorBase();
    if (std::optional<Tensor<4>> fused =
            FusedAttention(q, k, v, options.causal, padding)) {
      return *fused;
    }
  }
  return ComposedAttention(q, k, v, options, dropout);
}

struct KINDLING_MODULE MultiHeadAttention {
  // PyTorch's names and layouts: the query, key and value projections
  // stacked as rows of [3 E, E] (y = x W^T + b), then the output
  // projection.
  Param<Tensor<2>> in_proj_weight;  // [3 E, E]
  Param<Tensor<1>> in_proj_bias;    // [3 E]
  Linear out_proj;                  // E -> E
  int64_t num_heads = 1;
  double dropout = 0;

  // Forward(): attention of `query` [B, T, E] over `key` and `value`
  // [B, S, E] -> [B, T, E]. Aborts naming the shapes when they do not fit.
  Tensor<3> Forward(const Tensor<3>& query, const Tensor<3>& key,
                    const Tensor<3>& value,
                    const AttentionOptions& options = {}) const {
    const int64_t d_model = in_proj_weight->dim(1);
    KINDLING_CHECK(query.dim(2) == d_model && key.dim(2) == d_model &&
                       value.dim(2) == d_model && key.dim(0) == query.dim(0) &&
                       value.dim(0) == query.dim(0) &&
                       key.dim(1) == value.dim(1),
                   "MultiHeadAttention(E=%d): query %s, key %s, value %s "
                   "(want [B, T, E], [B, S, E], [B, S, E])",
                   d_model, query.shape().ToString(), key.shape().ToString(),
                   value.shape().ToString());
    const Tensor<4> q = Heads(Project(query, 0));
    const Tensor<4> k = Heads(Project(key, 1));
    const Tensor<4> v = Heads(Project(value, 2));
    const Tensor<4> heads =
        ScaledDotProductAttention(q, k, v, options, dropout);
    // [B, H, T, Dh] -> [B, T, H * Dh]
    const Tensor<3> merged =
        heads.permute({0, 2, 1, 3})
            .contiguous()
            .reshape<3>({query.dim(0), query.dim(1), d_model});
    return out_proj.Forward(merged);
  }

  // Forward(x) is self-attention: Forward(x, x, x).
  Tensor<3> Forward(const Tensor<3>& x,
                    const AttentionOptions& options = {}) const {
    return Forward(x, x, x, options);
  }

 private:
  // Project() is x W_i^T + b_i for projection i (0 query, 1 key, 2 value).
  Tensor<3> Project(const Tensor<3>& x, int i) const {
    const int64_t d_model = in_proj_weight->dim(1);
    const Tensor<2> w = in_proj_weight->narrow(0, i * d_model, d_model);
    const Tensor<1> b = in_proj_bias->narrow(0, i * d_model, d_model);
    return matmul_bias(x, w.t(), b);
  }
  // Heads() splits [B, L, E] into [B, H, L, E / H].
  Tensor<4> Heads(const Tensor<3>& x) const {
    return x.reshape<4>({x.dim(0), x.dim(1), num_heads, x.dim(2) / num_heads})
        .permute({0, 2, 1, 3});
  }
};

struct MultiHeadAttentionConfig {
  int64_t d_model;
  int64_t num_heads;
  double dropout = 0;

  // Init(): torch's initialization: in_proj_weight Xavier-uniform, the
  // biases zero, out_proj's weight as a Linear's. Aborts unless num_heads
  // divides d_model.
  MultiHeadAttention Init(const Device& device = Device::Cpu()) const {
    KINDLING_CHECK(num_heads > 0 && d_model % num_heads == 0,
                   "MultiHeadAttention: d_model %d is not a multiple of "
                   "num_heads %d",
                   d_model, num_heads);
    Linear out_proj = LinearConfig{d_model, d_model}.Init(device);
    out_proj.bias = Initializer::Zeros().Init<1>({d_model}, device);
    return MultiHeadAttention{
        Initializer::XavierUniform(1.0).Init<2>({3 * d_model, d_model}, device,
                                                d_model, 3 * d_model),
        Initializer::Zeros().Init<1>({3 * d_model}, device),
        std::move(out_proj), num_heads, dropout};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_ATTENTION_H_
