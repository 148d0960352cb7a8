#include "kindling/data/epoch_order.h"

#include <numeric>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/generator.h"

namespace kindling::data {
namespace {

uint64_t Mix(uint64_t value) {
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// EpochSeed() hashes (seed, epoch) into one generator seed, so that nearby
// pairs such as (1, 0) and (0, 1) do not share a sequence.
uint64_t EpochSeed(uint64_t seed, int64_t epoch) {
  return Mix(Mix(seed) ^
             (static_cast<uint64_t>(epoch) + 0x9e3779b97f4a7c15ull));
}

// UniformBelow() is uniform in [0, bound) without modulo bias (Lemire's
// multiply-and-reject).
uint64_t UniformBelow(Generator& generator, uint64_t bound) {
  unsigned __int128 product =
      static_cast<unsigned __int128>(generator.NextBits()) * bound;
  uint64_t low = static_cast<uint64_t>(product);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<unsigned __int128>(generator.NextBits()) * bound;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

}  // namespace

std::vector<int64_t> EpochOrder(uint64_t seed, int64_t epoch, int64_t size) {
  KINDLING_CHECK(size >= 0 && epoch >= 0,
                 "EpochOrder: size %d and epoch %d must not be negative", size,
                 epoch);
  std::vector<int64_t> order(size);
  std::iota(order.begin(), order.end(), int64_t{0});
  Generator generator(EpochSeed(seed, epoch));
  for (int64_t i = size - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(
        UniformBelow(generator, static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace kindling::data
