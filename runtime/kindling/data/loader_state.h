// LoaderState: where a DataLoader is in its stream of batches, small enough
// to save in a training checkpoint.
//
// The data order depends only on (seed, epoch) (see epoch_order.h), so these
// four numbers are all it takes to resume the exact sequence of batches a
// training run would have seen: restore the model, the optimizer and this,
// and the next batch is the one the interrupted run would have trained on.
//
//   kindling::data::LoaderState state = loader.state();
//   std::string text = kindling::data::EncodeLoaderState(state);
//   // ... save `text` in the checkpoint's metadata; after a restart:
//   absl::StatusOr<kindling::data::LoaderState> saved =
//       kindling::data::DecodeLoaderState(text);
//   if (!saved.ok()) return saved.status();
//   if (absl::Status status = loader.Restore(*saved); !status.ok()) ...
#ifndef KINDLING_DATA_LOADER_STATE_H_
#define KINDLING_DATA_LOADER_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kindling::data {

struct LoaderState {
  // seed is the shuffle seed; the order of an epoch is EpochOrder(seed,
  // epoch, dataset_size).
  uint64_t seed = 0;
  // epoch counts from 0.
  int64_t epoch = 0;
  // position is how many samples of this epoch have been handed out.
  int64_t position = 0;
  // dataset_size is the number of samples of the data set the state belongs
  // to; restoring it into a loader over a data set of another size is an
  // error rather than a silently different order.
  int64_t dataset_size = 0;

  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

// EncodeLoaderState() is a one-line text form, e.g.
// "seed=42 epoch=3 position=1280 dataset_size=60000", for string metadata
// (safetensors' __metadata__ holds strings).
std::string EncodeLoaderState(const LoaderState& state);

// DecodeLoaderState() reads what EncodeLoaderState() writes; anything else
// (a missing or unknown field, a bad number, a negative epoch or position, a
// position beyond dataset_size) is InvalidArgument quoting the text.
[[nodiscard]] absl::StatusOr<LoaderState> DecodeLoaderState(
    std::string_view text);

}  // namespace kindling::data

#endif  // KINDLING_DATA_LOADER_STATE_H_
