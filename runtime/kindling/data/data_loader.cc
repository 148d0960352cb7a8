#include "kindling/data/data_loader.h"

#include "absl/strings/str_format.h"
#include "kindling/core/check.h"

namespace kindling::data::loader_internal {
namespace {

constexpr int kMaxPrefetchBatches = 8;

}  // namespace

void CheckOptions(const DataLoaderOptions& options) {
  KINDLING_CHECK(options.batch_size >= 1,
                 "DataLoader: batch_size %d must be at least 1",
                 options.batch_size);
  KINDLING_CHECK(options.prefetch_batches >= 0 &&
                     options.prefetch_batches <= kMaxPrefetchBatches,
                 "DataLoader: prefetch_batches %d is outside 0..%d",
                 options.prefetch_batches, kMaxPrefetchBatches);
  KINDLING_CHECK(options.shard_count >= 1 && options.shard_index >= 0 &&
                     options.shard_index < options.shard_count,
                 "DataLoader: shard_index %d is outside 0..shard_count-1 "
                 "(shard_count %d)",
                 options.shard_index, options.shard_count);
}

int64_t GlobalBatch(const DataLoaderOptions& options) {
  return options.batch_size * options.shard_count;
}

int64_t EpochEnd(int64_t size, const DataLoaderOptions& options) {
  const int64_t global = GlobalBatch(options);
  const int64_t full = size / global * global;
  // A tail every rank gets a sample of, unless drop_last.
  return options.drop_last || size - full < options.shard_count ? full : size;
}

int64_t BatchesPerEpoch(int64_t size, const DataLoaderOptions& options) {
  const int64_t global = GlobalBatch(options);
  return (EpochEnd(size, options) + global - 1) / global;
}

absl::Status CheckRestore(const LoaderState& state, int64_t size) {
  if (state.dataset_size == size && state.epoch >= 0 && state.position >= 0 &&
      state.position <= state.dataset_size) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "DataLoader::Restore: state \"%s\" does not fit a data set of %d "
      "samples (it needs dataset_size %d, epoch >= 0 and 0 <= position <= "
      "dataset_size)",
      EncodeLoaderState(state), size, size));
}

}  // namespace kindling::data::loader_internal
