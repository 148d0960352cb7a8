// Philox4x32-10 and the bit-to-number mapping every Kindling backend uses to
// fill tensors with random values.
//
// Philox (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1,
// 2, 3", SC 2011) is counter-based: block b of a stream is a pure function
// Philox4x32_10(counter, key) of its index, so any element can be computed
// independently of every other. That is what lets a fill run over any number
// of threads (or GPU blocks) and give the same values, and what lets dropout's
// mask be recomputed in backward from two integers instead of being stored.
//
// The exact stream, which a CUDA kernel must reproduce bit for bit:
//
//   key      = (lo32(seed), hi32(seed))
//   counter  = (lo32(offset + b), hi32(offset + b), 0, 0)   sum mod 2^64
//   block b  = words w[4b .. 4b+3] = Philox4x32_10(counter, key)
//
// Numbers from words (the functions below; `>>` is a logical shift):
//
//   UniformFloat(w)      = (w >> 8) * 2^-24                in [0, 1)
//   OpenUniformFloat(w)  = ((w >> 8) + 1) * 2^-24          in (0, 1]
//   UniformDouble(a, b)  = (((a << 32) | b) >> 11) * 2^-53   in [0, 1)
//   OpenUniformDouble    = that + 2^-53                     in (0, 1]
//
// How a fill of n elements of one dtype maps elements to words (element i):
//
//   uniform, 16/32-bit float: u = UniformFloat(w[i]);
//       with low and high first rounded to the output dtype, value =
//       min(low + (u * (high - low)), the largest dtype value below high)
//       in float (f64: double), no fused multiply-add, then rounded once to
//       the dtype (the min keeps rounding from reaching high; if low == high
//       every value is low).
//   uniform, f64: u = UniformDouble(w[2i], w[2i+1]).
//   normal, 16/32-bit float: Box-Muller on the pair (2j, 2j+1) from words
//       w[2j], w[2j+1]: BoxMullerFloat() (box_muller.h: radius from
//       OpenUniformFloat(w[2j]), angle 2 pi UniformFloat(w[2j+1]), first =
//       r cos, second = r sin, with Kindling's own float log and sincos);
//       element = mean + std * z in float. An odd last element keeps only
//       the first of its pair.
//   normal, f64: the pair (2j, 2j+1) uses block j: r from
//       OpenUniformDouble(w[4j], w[4j+1]), t from UniformDouble(w[4j+2],
//       w[4j+3]), computed in double.
//   bernoulli / dropout keep mask (any dtype): element i is kept iff
//       (w[i] >> 8) >= ceil(p * 2^24), i.e. iff UniformFloat(w[i]) >= p.
//
// So a fill consumes ceil(n / 4) blocks, or ceil(n / 2) for f64 uniform and
// normal (PhiloxBlocksForFill, random_distribution.h). Uniform, mask and
// 16/32-bit normal values are bit-exact across backends that follow these
// formulas; f64 normals go through libm's log, sqrt, cos and sin, which CUDA
// and glibc may round differently in the last place.
#ifndef KINDLING_TENSOR_PHILOX_H_
#define KINDLING_TENSOR_PHILOX_H_

#include <array>
#include <cstdint>

// KINDLING_HOST_DEVICE marks the functions below as callable from CUDA device
// code too (a CUDA kernel reproduces this stream bit for bit); for any other
// compiler it is empty. std::array's members are host constexpr functions, so
// nvcc needs --expt-relaxed-constexpr for device calls.
#ifndef KINDLING_HOST_DEVICE
#if defined(__CUDACC__)
#define KINDLING_HOST_DEVICE __host__ __device__
#else
#define KINDLING_HOST_DEVICE
#endif
#endif

namespace kindling {

// PhiloxBlock is the 128-bit output (and input counter) of one Philox call.
using PhiloxBlock = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Philox4x32_10() is ten rounds of Philox on `counter` under `key`; it matches
// the Random123 reference (known-answer tests in tests/tensor/random_test.cc).
KINDLING_HOST_DEVICE constexpr PhiloxBlock Philox4x32_10(PhiloxBlock counter,
                                                         PhiloxKey key) {
  // Round multipliers and Weyl key increments from the Philox paper.
  constexpr uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kKeyStep0 = 0x9E3779B9u;
  constexpr uint32_t kKeyStep1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kKeyStep0;
      key[1] += kKeyStep1;
    }
    const uint64_t product0 = uint64_t{kMultiplier0} * counter[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(product0)};
  }
  return counter;
}

// PhiloxKeyFromSeed() splits a 64-bit seed into the two key words.
KINDLING_HOST_DEVICE constexpr PhiloxKey PhiloxKeyFromSeed(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

// PhiloxCounter() is the counter of block `block` (offset + index, mod 2^64).
KINDLING_HOST_DEVICE constexpr PhiloxBlock PhiloxCounter(uint64_t block) {
  return {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0,
          0};
}

// UniformFloat() is the top 24 bits of `word` as a float in [0, 1); every
// value is exact.
KINDLING_HOST_DEVICE constexpr float UniformFloat(uint32_t word) {
  return static_cast<float>(word >> 8) * 0x1p-24f;
}

// OpenUniformFloat() is in (0, 1], so its logarithm is finite.
KINDLING_HOST_DEVICE constexpr float OpenUniformFloat(uint32_t word) {
  return static_cast<float>((word >> 8) + 1) * 0x1p-24f;
}

// UniformDouble() is the top 53 of the 64 bits (high:low) in [0, 1).
KINDLING_HOST_DEVICE constexpr double UniformDouble(uint32_t high,
                                                    uint32_t low) {
  const uint64_t bits = (uint64_t{high} << 32) | low;
  return static_cast<double>(bits >> 11) * 0x1p-53;
}

// OpenUniformDouble() is in (0, 1].
KINDLING_HOST_DEVICE constexpr double OpenUniformDouble(uint32_t high,
                                                        uint32_t low) {
  const uint64_t bits = (uint64_t{high} << 32) | low;
  return static_cast<double>((bits >> 11) + 1) * 0x1p-53;
}

// KeepThreshold() is the integer t with ((w >> 8) >= t) == (UniformFloat(w)
// >= prob): ceil(prob * 2^24). REQUIRES: 0 <= prob <= 1.
KINDLING_HOST_DEVICE constexpr uint32_t KeepThreshold(double prob) {
  const double scaled = prob * 0x1p24;  // exact: a power-of-two scale
  const auto floor = static_cast<uint32_t>(scaled);
  return static_cast<double>(floor) == scaled ? floor : floor + 1;
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_PHILOX_H_
