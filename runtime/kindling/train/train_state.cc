#include "kindling/train/train_state.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kindling::train {
namespace {

absl::StatusOr<std::string> Entry(const io::SafetensorsHeader& header,
                                  const std::string& key,
                                  const std::string& file_name) {
  const std::string* value = header.FindMetadata(key);
  if (value == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": not a training checkpoint (no metadata entry '", key,
        "')"));
  }
  return *value;
}

template <typename Int>
absl::StatusOr<Int> Number(const io::SafetensorsHeader& header,
                           const std::string& key,
                           const std::string& file_name) {
  absl::StatusOr<std::string> text = Entry(header, key, file_name);
  if (!text.ok()) return text.status();
  Int value = 0;
  if (!absl::SimpleAtoi(*text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": metadata '", key, "' = '", *text, "' is not a number"));
  }
  return value;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> EncodeTrainState(
    const TrainState& state) {
  return {{"train.format", kTrainStateFormat},
          {"train.epoch", absl::StrCat(state.epoch)},
          {"train.step", absl::StrCat(state.step)},
          {"train.loader", data::EncodeLoaderState(state.loader)},
          {"train.dropout_seed", absl::StrCat(state.dropout.seed)},
          {"train.dropout_offset", absl::StrCat(state.dropout.offset)}};
}

absl::StatusOr<TrainState> DecodeTrainState(const io::SafetensorsHeader& header,
                                            const std::string& file_name) {
  absl::StatusOr<std::string> format = Entry(header, "train.format", file_name);
  if (!format.ok()) return format.status();
  if (*format != kTrainStateFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": training state format '", *format,
                     "', expected '", kTrainStateFormat, "'"));
  }
  absl::StatusOr<int64_t> epoch =
      Number<int64_t>(header, "train.epoch", file_name);
  absl::StatusOr<int64_t> step =
      Number<int64_t>(header, "train.step", file_name);
  absl::StatusOr<uint64_t> seed =
      Number<uint64_t>(header, "train.dropout_seed", file_name);
  absl::StatusOr<uint64_t> offset =
      Number<uint64_t>(header, "train.dropout_offset", file_name);
  absl::StatusOr<std::string> loader_text =
      Entry(header, "train.loader", file_name);
  for (const absl::Status& status :
       {epoch.status(), step.status(), seed.status(), offset.status(),
        loader_text.status()}) {
    if (!status.ok()) return status;
  }
  if (*epoch < 0 || *step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": negative epoch ", *epoch, " or step ", *step));
  }
  absl::StatusOr<data::LoaderState> loader =
      data::DecodeLoaderState(*loader_text);
  if (!loader.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": metadata 'train.loader': ", loader.status().message()));
  }
  return TrainState{.epoch = *epoch,
                    .step = *step,
                    .loader = *loader,
                    .dropout = PhiloxState{*seed, *offset}};
}

}  // namespace kindling::train
