// Positions for sequence models: fixed sinusoidal encodings (Vaswani et al.,
// 2017) and a learned table (GPT-2's `wpe`).
//
//   Tensor<2> table = kindling::nn::SinusoidalPositions(128, 64);  // [128, 64]
//   auto learned = kindling::nn::PositionalEmbeddingConfig{1024, 768}.Init();
//   Tensor<3> x = tokens + learned.Forward(seq_len).unsqueeze(0);
#ifndef KINDLING_NN_POSITIONAL_H_
#define KINDLING_NN_POSITIONAL_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/initializer.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// SinusoidalPositions() is the [length, d_model] table with
//   row p, column 2i:     sin(p / 10000^(2i / d_model))
//   row p, column 2i + 1: cos(p / 10000^(2i / d_model))
// computed in double and stored as f32. REQUIRES: d_model even (checked).
inline Tensor<2> SinusoidalPositions(int64_t length, int64_t d_model,
                                     const Device& device = Device::Cpu()) {
  KINDLING_CHECK(length >= 0 && d_model > 0 && d_model % 2 == 0,
                 "SinusoidalPositions: length %d, d_model %d (d_model must be "
                 "even and positive)",
                 length, d_model);
  std::vector<float> table(length * d_model);
  for (int64_t p = 0; p < length; ++p) {
    for (int64_t i = 0; i < d_model / 2; ++i) {
      const double angle =
          p / std::pow(10000.0, 2.0 * i / static_cast<double>(d_model));
      table[p * d_model + 2 * i] = static_cast<float>(std::sin(angle));
      table[p * d_model + 2 * i + 1] = static_cast<float>(std::cos(angle));
    }
  }
  return Tensor<2>::FromData(table, {length, d_model}).to_device(device);
}

// PositionalEmbedding: a learned vector per position, up to max_length.
struct KINDLING_MODULE PositionalEmbedding {
  Param<Tensor<2>> weight;  // [max_length, d_model]

  // Forward(): the first `length` rows, [length, d_model] (a view). Aborts
  // naming both when length exceeds the table.
  Tensor<2> Forward(int64_t length) const {
    KINDLING_CHECK(length >= 0 && length <= weight->dim(0),
                   "PositionalEmbedding: a sequence of %d positions, but the "
                   "table holds %d",
                   length, weight->dim(0));
    return weight->narrow(0, 0, length);
  }
};

struct PositionalEmbeddingConfig {
  int64_t max_length;
  int64_t d_model;
  // GPT-2 initializes its position table with N(0, 0.02).
  Initializer initializer = Initializer::Normal(0.0, 0.02);

  PositionalEmbedding Init(const Device& device = Device::Cpu()) const {
    return PositionalEmbedding{
        initializer.Init<2>({max_length, d_model}, device)};
  }
};

}  // namespace kindling::nn

#endif  // KINDLING_NN_POSITIONAL_H_
