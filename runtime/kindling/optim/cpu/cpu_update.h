// What the optimizer rules' CPU kernels share: element loads and stores in
// the compute type, the storage rounding update_math.h's formulas take, and
// one loop that runs a formula over a parameter in parallel chunks.
#ifndef KINDLING_OPTIM_CPU_CPU_UPDATE_H_
#define KINDLING_OPTIM_CPU_CPU_UPDATE_H_

#include <cstdint>
#include <type_traits>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::optim_cpu {

// ComputeType<T>: f64 stays f64; f32, f16 and bf16 compute in f32.
template <class T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline ComputeType<T> Load(T value) {
  return cpu::Convert<ComputeType<T>>(value);
}

template <class T>
inline T Store(ComputeType<T> value) {
  return cpu::Convert<T>(value);
}

// RoundTo<T>: update_math.h's `round` for state stored as T.
template <class T>
struct RoundTo {
  ComputeType<T> operator()(ComputeType<T> x) const {
    if constexpr (std::is_same_v<T, ComputeType<T>>) {
      return x;
    } else {
      return Load(Store<T>(x));
    }
  }
};

// DataOf<T>() is a tensor's elements, or nullptr for an undefined tensor
// (state a rule's options leave out).
template <class T>
T* DataOf(const TensorBase& tensor) {
  return tensor.defined() ? tensor.data_as<T>() : nullptr;
}

// The rules with a square root and a division per element (Adam, RMSprop)
// split a parameter over threads from cpu::kHeavyElementGrain elements.
// With kElementGrain, the MLP example's two 256 x 256 weights (65 536
// elements each) were updated by one thread while the other idled; at the
// heavy grain an MLP epoch took 0.92-0.99x the time (benches/train_bench,
// six alternating pairs of runs, 2 threads).

// ForEachChunk() calls range(begin, end) over [0, count) in parallel chunks
// of at least `grain` elements.
template <class Range>
void ForEachChunk(int64_t count, const Range& range,
                  int64_t grain = cpu::kElementGrain) {
  cpu::ParallelFor(count, grain, range);
}

// RunSixteenLanes() is range(begin, end) compiled for AVX-512: `range` must
// be always_inline, with every function it calls inline, so that its loop is
// vectorized here, sixteen floats per instruction (REQUIRES:
// cpu::HasAvx512()).
template <class Range>
[[gnu::target("avx512f,prefer-vector-width=512")]] void RunSixteenLanes(
    const Range& range, int64_t begin, int64_t end) {
  range(begin, end);
}

// ForEachChunkWide() is ForEachChunk() with each chunk's loop built for
// sixteen lanes where the CPU has AVX-512, for rules bound by their
// divisions and square roots rather than their bytes. Correctly rounded
// operations in the same order give the same bits at either width (this
// library builds with -ffp-contract=off, so no multiply is fused into an
// add at one width and not the other).
//
// Adam's step over the MLP example's weights (335 K elements, both
// threads) took 0.62x the time of the eight-lane loop on the AVX-512 Zen 5
// host (17 ms against 27.5 ms for 469 steps in a loop; 22 ms against 33 ms
// an epoch inside benches/train_bench's MLP epoch, timed around each step).
// RMSprop's loop (one square root and one division an element) showed no
// steady gain on the same weights: 20.4-22.5 ms in most runs (a few at
// 12.4 ms) against 20.6-21.4 ms for the eight-lane loop in its quiet runs;
// it stays eight lanes wide.
template <class Range>
void ForEachChunkWide(int64_t count, const Range& range, int64_t grain) {
  if (cpu::HasAvx512()) {
    ForEachChunk(
        count,
        [&range](int64_t begin, int64_t end) {
          RunSixteenLanes(range, begin, end);
        },
        grain);
  } else {
    ForEachChunk(count, range, grain);
  }
}

}  // namespace kindling::optim_cpu

#endif  // KINDLING_OPTIM_CPU_CPU_UPDATE_H_
