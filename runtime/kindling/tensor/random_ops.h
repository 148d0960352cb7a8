// Random tensor ops on TensorBase: fills drawn from a PhiloxGenerator, and
// dropout as a pure function of (seed, offset).
//
// Every op here writes its output in one pass on the device's backend
// (Backend::FillRandom / Backend::Dropout), directly in the output dtype, with
// the stream defined in philox.h: same seed and offset, same values on every
// backend and thread count.
//
//   PhiloxGenerator generator(7);
//   TensorBase w = ops::RandomNormal({256, 128}, DType::kBF16, Device::Cpu(),
//                                    generator, /*mean=*/0, /*std=*/0.02);
//
// Dropout for autodiff: the mask is never stored. Forward reserves blocks
// once and records (seed, offset, prob); backward applies the same op to the
// incoming gradient, which multiplies it by the same mask and scale:
//
//   const uint64_t offset = ReserveDropoutBlocks(generator, x);
//   TensorBase y = ops::Dropout(x, prob, generator.seed(), offset);
//   ...
//   TensorBase grad_x = ops::Dropout(grad_y, prob, seed, offset);
#ifndef KINDLING_TENSOR_RANDOM_OPS_H_
#define KINDLING_TENSOR_RANDOM_OPS_H_

#include <cstdint>

#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_distribution.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// RandomUniform() is uniform in [low, high) of `dtype` (the bounds rounded to
// it). REQUIRES: a floating dtype, finite low <= high; when low == high every
// element is low.
TensorBase RandomUniform(const Shape& shape, DType dtype, const Device& device,
                         PhiloxGenerator& generator, double low, double high);

// RandomNormal() is N(mean, std^2). REQUIRES: a floating dtype, std >= 0.
TensorBase RandomNormal(const Shape& shape, DType dtype, const Device& device,
                        PhiloxGenerator& generator, double mean, double std);

// DropoutMask() is the mask Dropout() multiplies by, materialized: scale where
// kept, 0 where dropped, scale = 1 / (1 - prob). REQUIRES: a floating dtype,
// 0 <= prob < 1.
TensorBase DropoutMask(const Shape& shape, DType dtype, const Device& device,
                       double prob, uint64_t seed, uint64_t offset);

// ReserveDropoutBlocks() advances `generator` past the blocks a dropout of
// `in` reads and returns their first offset.
uint64_t ReserveDropoutBlocks(PhiloxGenerator& generator, const TensorBase& in);

// Dropout() is in * DropoutMask(in's shape, in's dtype, prob, seed, offset),
// in one pass. `in` may be any strided view; the result is contiguous.
// REQUIRES: a floating dtype, 0 <= prob < 1.
TensorBase Dropout(const TensorBase& in, double prob, uint64_t seed,
                   uint64_t offset);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_RANDOM_OPS_H_
