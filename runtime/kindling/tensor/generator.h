// Generator: a seedable random bit source for tensor initializers.
//
// Same seed, same sequence, on every run and platform: the bits come from
// xoshiro256** (seeded through SplitMix64), and the float distributions below
// are written out rather than taken from <random>, whose distributions differ
// between standard libraries. Tensor<D>::RandomUniform / RandomNormal draw
// from a Generator the caller passes, so reproducibility is explicit:
//
//   kindling::Generator generator(/*seed=*/42);
//   auto w = kindling::Tensor<2>::RandomNormal({4, 4}, generator);
//
// A Generator is a value: copying it forks the sequence (both copies produce
// the same numbers). It is not thread-safe; give each thread its own.
#ifndef KINDLING_TENSOR_GENERATOR_H_
#define KINDLING_TENSOR_GENERATOR_H_

#include <array>
#include <cstdint>

namespace kindling {

class Generator {
 public:
  explicit Generator(uint64_t seed);

  // NextBits() is 64 uniformly random bits.
  uint64_t NextBits();
  // NextUniform() is uniform in [0, 1) with 53 random bits.
  double NextUniform();
  // NextNormal() is standard normal (Box-Muller; uses two uniforms per pair).
  double NextNormal();

 private:
  std::array<uint64_t, 4> state_;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_GENERATOR_H_
