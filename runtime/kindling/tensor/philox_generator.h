// PhiloxGenerator: the seed and counter position that tensor random fills
// draw from, as two integers a training checkpoint saves and restores.
//
// The generator holds no buffered bits: a fill of n elements reserves the
// next PhiloxBlocksForFill() counter blocks (random_distribution.h) and the
// backend computes every element from (seed, offset + block), see philox.h.
// So the state is exactly (seed, offset); restoring it with set_state()
// reproduces every later draw bit for bit, on any backend and thread count.
//
//   kindling::PhiloxGenerator generator(/*seed=*/42);
//   auto w = kindling::Tensor<2>::RandomNormal({4, 4}, generator);
//   kindling::PhiloxState saved = generator.state();  // into a checkpoint
//   ...
//   generator.set_state(saved);  // the next draws repeat
//
// A PhiloxGenerator is a value: copying it forks the stream (both copies
// produce the same numbers). It is not thread-safe; give each thread its own,
// or one seed each.
#ifndef KINDLING_TENSOR_PHILOX_GENERATOR_H_
#define KINDLING_TENSOR_PHILOX_GENERATOR_H_

#include <cstdint>

namespace kindling {

// PhiloxState is a generator's complete state.
struct PhiloxState {
  uint64_t seed = 0;
  // offset is the first unused counter block.
  uint64_t offset = 0;

  friend bool operator==(const PhiloxState&, const PhiloxState&) = default;
};

class PhiloxGenerator {
 public:
  explicit PhiloxGenerator(uint64_t seed, uint64_t offset = 0)
      : state_{seed, offset} {}
  explicit PhiloxGenerator(const PhiloxState& state) : state_(state) {}

  uint64_t seed() const { return state_.seed; }
  uint64_t offset() const { return state_.offset; }

  // state() / set_state() save and restore the generator exactly.
  PhiloxState state() const { return state_; }
  void set_state(const PhiloxState& state) { state_ = state; }

  // ReserveBlocks() returns the offset a fill of `blocks` counter blocks
  // starts at and advances past them. Aborts if the offset would pass 2^64
  // (at 16 bytes a block, unreachable in practice).
  uint64_t ReserveBlocks(uint64_t blocks);

 private:
  PhiloxState state_;
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_PHILOX_GENERATOR_H_
