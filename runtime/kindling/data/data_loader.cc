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
}

int64_t EpochEnd(int64_t size, const DataLoaderOptions& options) {
  return options.drop_last ? size / options.batch_size * options.batch_size
                           : size;
}

int64_t BatchesPerEpoch(int64_t size, const DataLoaderOptions& options) {
  return options.drop_last
             ? size / options.batch_size
             : (size + options.batch_size - 1) / options.batch_size;
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
