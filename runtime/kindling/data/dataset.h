// Dataset: what a DataLoader batches, as a concept. A data set is anything
// with a size and a way to gather a batch of samples by index (Burn's
// Dataset and Batcher in one):
//
//   struct Pairs {                               // a regression data set
//     kindling::Tensor<2> x;                     // [N, 3]
//     kindling::Tensor<2> y;                     // [N, 1]
//     struct Batch {
//       kindling::Tensor<2> x, y;
//     };
//     int64_t size() const { return x.dim(0); }
//     Batch Gather(std::span<const int64_t> indices) const {
//       const auto index = kindling::Tensor<1, kindling::Int>::FromData(
//           std::vector<int64_t>(indices.begin(), indices.end()),
//           {static_cast<int64_t>(indices.size())});
//       return {x.index_select(0, index), y.index_select(0, index)};
//     }
//   };
//   kindling::data::DataLoader loader(Pairs{...}, {.batch_size = 32});
//
// Gather() runs on the loader's background thread while the consumer
// trains, so it must be safe to call on a const data set from another
// thread, and the batch it returns must own its data (a copy, not a view
// into memory the consumer may change).
//
// Optional members the loader uses when present:
//   * `D PreparedForLoading() const`: called once by the loader's
//     constructor, on the consumer's thread; returns the copy the loader
//     keeps (e.g. with its tensors packed for fast gathers), and may check
//     the data set (abort with a message: a broken data set is a bug).
//   * `int64_t epoch, index` members of the batch type: the loader stamps
//     each batch's epoch and its place in the epoch there.
#ifndef KINDLING_DATA_DATASET_H_
#define KINDLING_DATA_DATASET_H_

#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

namespace kindling::data {

template <class D>
concept Dataset = std::movable<D> &&
    requires(const D& dataset, std::span<const int64_t> indices) {
  { dataset.size() } -> std::convertible_to<int64_t>;
  { dataset.Gather(indices) } -> std::movable;
};

// BatchOf<D> is the type D's Gather() returns.
template <Dataset D>
using BatchOf = std::remove_cvref_t<decltype(std::declval<const D&>().Gather(
    std::declval<std::span<const int64_t>>()))>;

}  // namespace kindling::data

#endif  // KINDLING_DATA_DATASET_H_
