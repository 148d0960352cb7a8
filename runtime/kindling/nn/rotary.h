// Rotary position embeddings (RoPE; Su et al., 2021), in the "rotate half"
// layout of GPT-NeoX and LLaMA: the head's first and second halves are the
// two coordinates of Dh / 2 planes, plane i turned by the angle
// position * base^(-2i / Dh).
//
//   q = kindling::nn::ApplyRotary(q);  // q: [B, H, T, Dh], before q k^T
//   k = kindling::nn::ApplyRotary(k);
//
// Applied to queries and keys, it makes their dot product depend on the
// positions' difference only. No parameters.
#ifndef KINDLING_NN_ROTARY_H_
#define KINDLING_NN_ROTARY_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/tensor.h"

namespace kindling::nn {

// ApplyRotary(): x [B, H, T, Dh] with position p = offset + t turned as
// above: out = cat(x1 cos - x2 sin, x2 cos + x1 sin). The angles, their
// cosines and sines are computed in double and rounded to x's dtype. Aborts
// unless Dh is even.
inline Tensor<4> ApplyRotary(const Tensor<4>& x, int64_t offset = 0,
                             double base = 10000) {
  const int64_t length = x.dim(2), head_dim = x.dim(3), half = head_dim / 2;
  KINDLING_CHECK(head_dim % 2 == 0 && offset >= 0,
                 "ApplyRotary: input %s (the head size must be even), offset "
                 "%d",
                 x.shape().ToString(), offset);
  std::vector<double> cos_table(length * half), sin_table(length * half);
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle =
          static_cast<double>(offset + t) *
          std::pow(base, -2.0 * static_cast<double>(i) / head_dim);
      cos_table[t * half + i] = std::cos(angle);
      sin_table[t * half + i] = std::sin(angle);
    }
  }
  const Tensor<2> cos = Tensor<2>::FromData(cos_table, {length, half})
                            .to_device(x.device())
                            .to(x.dtype());
  const Tensor<2> sin = Tensor<2>::FromData(sin_table, {length, half})
                            .to_device(x.device())
                            .to(x.dtype());
  const Tensor<4> x1 = x.narrow(3, 0, half);
  const Tensor<4> x2 = x.narrow(3, half, half);
  return cat(std::vector<Tensor<4>>{x1 * cos - x2 * sin, x2 * cos + x1 * sin},
             3);
}

}  // namespace kindling::nn

#endif  // KINDLING_NN_ROTARY_H_
