// TrainState: the counters and random-number positions a training run needs,
// besides the model and the optimizer, to continue exactly where it stopped.
//
//   kindling::train::TrainState state{.epoch = 2, .step = 938, ...};
//   std::vector<std::pair<std::string, std::string>> metadata =
//       kindling::train::EncodeTrainState(state);   // safetensors metadata
//   absl::StatusOr<TrainState> back =
//       kindling::train::DecodeTrainState(header);   // from a file's header
//
// It lives in the model file's `__metadata__` of a training checkpoint
// (checkpoint.h), as strings, so one file header tells where a run was.
#ifndef KINDLING_TRAIN_TRAIN_STATE_H_
#define KINDLING_TRAIN_TRAIN_STATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kindling/data/loader_state.h"
#include "kindling/io/safetensors.h"
#include "kindling/tensor/philox_generator.h"

namespace kindling::train {

struct TrainState {
  // epoch is the epoch in progress (= epochs completed when position is 0).
  int64_t epoch = 0;
  // step is how many optimizer steps have run in the whole run.
  int64_t step = 0;
  // loader decides which samples come next (data order).
  data::LoaderState loader{};
  // dropout is the Philox generator position that dropout masks draw from.
  PhiloxState dropout{};

  friend bool operator==(const TrainState&, const TrainState&) = default;
};

// kTrainStateFormat names the layout of the entries below; a checkpoint with
// another value is rejected rather than misread.
inline constexpr char kTrainStateFormat[] = "kindling.train.v1";

// EncodeTrainState() is the metadata entries ("train.format", "train.epoch",
// "train.step", "train.loader", "train.dropout_seed", "train.dropout_offset").
std::vector<std::pair<std::string, std::string>> EncodeTrainState(
    const TrainState& state);

// DecodeTrainState() reads those entries from `header`; a missing entry, an
// unknown format or a bad number is InvalidArgument naming the entry and
// `file_name`.
[[nodiscard]] absl::StatusOr<TrainState> DecodeTrainState(
    const io::SafetensorsHeader& header, const std::string& file_name);

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_TRAIN_STATE_H_
