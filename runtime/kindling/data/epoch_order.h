// EpochOrder: the order in which a DataLoader visits a data set in one epoch.
//
// Resuming training must reproduce the data order exactly, so the order is a
// pure function of (seed, epoch): no generator state carries over from one
// epoch to the next, and a loader restored at epoch 7 computes epoch 7's
// order directly. The shuffle is Fisher-Yates driven by kindling::Generator
// (xoshiro256**, the same on every platform) with unbiased bounded draws, so
// the order is also the same on every machine and standard library.
//
//   std::vector<int64_t> order = kindling::data::EpochOrder(
//       /*seed=*/42, /*epoch=*/0, /*size=*/60000);  // a permutation of
//       0..59999
#ifndef KINDLING_DATA_EPOCH_ORDER_H_
#define KINDLING_DATA_EPOCH_ORDER_H_

#include <cstdint>
#include <vector>

namespace kindling::data {

// EpochOrder() is a permutation of 0..size-1 determined by seed and epoch;
// distinct epochs (and seeds) give independent permutations.
// REQUIRES: size >= 0, epoch >= 0 (checked).
std::vector<int64_t> EpochOrder(uint64_t seed, int64_t epoch, int64_t size);

}  // namespace kindling::data

#endif  // KINDLING_DATA_EPOCH_ORDER_H_
