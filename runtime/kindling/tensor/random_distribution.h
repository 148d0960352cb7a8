// RandomDistribution: what Backend::FillRandom draws, and how many Philox
// blocks a fill of n elements consumes.
//
// The block count is part of the stream's definition (philox.h): a
// PhiloxGenerator advances its offset by exactly PhiloxBlocksForFill(), so the
// next fill starts on fresh counters, and two fills of n1 and n2 elements give
// the same values as one fill of n1 + n2 whenever n1 fills whole blocks.
#ifndef KINDLING_TENSOR_RANDOM_DISTRIBUTION_H_
#define KINDLING_TENSOR_RANDOM_DISTRIBUTION_H_

#include <cstdint>

#include "kindling/tensor/dtype.h"

namespace kindling {

// RandomDistribution names a fill and the meaning of its two parameters
// (a, b):
//   kUniform    uniform in [a, b) of the output dtype;
//   kNormal     normal with mean a and standard deviation b;
//   kBernoulli  the dropout mask: b where UniformFloat >= a (kept), else 0,
//               so a is the drop probability and b the survivors' scale.
enum class RandomDistribution { kUniform, kNormal, kBernoulli };

// PhiloxElementsPerBlock() is how many elements one 128-bit block fills.
constexpr int64_t PhiloxElementsPerBlock(RandomDistribution distribution,
                                         DType dtype) {
  const bool two_words_each =
      dtype == DType::kF64 && distribution != RandomDistribution::kBernoulli;
  return two_words_each ? 2 : 4;
}

// PhiloxBlocksForFill() is ceil(count / elements per block).
constexpr uint64_t PhiloxBlocksForFill(RandomDistribution distribution,
                                       DType dtype, int64_t count) {
  const int64_t per_block = PhiloxElementsPerBlock(distribution, dtype);
  return static_cast<uint64_t>((count + per_block - 1) / per_block);
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_RANDOM_DISTRIBUTION_H_
