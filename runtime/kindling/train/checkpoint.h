// Training checkpoints: one call saves everything a run needs to continue
// exactly, one call restores it.
//
//   TrainState state = ...;  // epoch, step, loader and dropout positions
//   KINDLING_RETURN_IF_ERROR(kindling::train::SaveTrainingCheckpoint(
//       "runs/mlp", model, optimizer, state));
//   ...  // later, maybe in another process:
//   absl::StatusOr<TrainState> resumed =
//       kindling::train::LoadLatestTrainingCheckpoint("runs/mlp", model,
//                                                     optimizer);
//
// On disk, under the run's directory:
//
//   runs/mlp/step-00000938/model.safetensors      parameters + TrainState
//   runs/mlp/step-00000938/optimizer.safetensors  optimizer state (its Save)
//   runs/mlp/latest                               "step-00000938"
//
// The model file is SaveModule()'s (loadable on its own, e.g. for inference)
// with the TrainState in its metadata; the optimizer file is
// Optimizer::Save()'s (hyper-parameters, step count, hence the schedule's
// position, and moments). Both are written with record's AtomicFile, and
// `latest` is rewritten (also atomically) only after both are complete, so a
// crash at any point leaves `latest` naming a whole checkpoint: the new one or
// the previous one. The two newest checkpoints are kept, older ones removed.
//
// Loading is all-or-nothing: the model is loaded into a copy, the optimizer
// loads against that copy (itself all-or-nothing), and only then is the copy
// assigned to `model`. On any error both are unchanged.
#ifndef KINDLING_TRAIN_CHECKPOINT_H_
#define KINDLING_TRAIN_CHECKPOINT_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/module_file.h"
#include "kindling/module/module_traits.h"
#include "kindling/optim/optimizer.h"
#include "kindling/train/train_state.h"

namespace kindling::train {

// SaveTrainingCheckpoint() writes model, optimizer and `state` as the
// checkpoint of step `state.step` under `out_dir` (created if missing) and
// makes it the latest.
template <Module M>
[[nodiscard]] absl::Status SaveTrainingCheckpoint(const std::string& out_dir,
                                                  const M& model,
                                                  const Optimizer& optimizer,
                                                  const TrainState& state);

// LoadTrainingCheckpoint() restores model and optimizer from the checkpoint
// directory `checkpoint_dir` (one `step-N` directory) and returns its state.
template <Module M>
[[nodiscard]] absl::StatusOr<TrainState> LoadTrainingCheckpoint(
    const std::string& checkpoint_dir, M& model, Optimizer& optimizer);

// LoadLatestTrainingCheckpoint() loads the checkpoint `out_dir/latest` names;
// NotFound when `out_dir` has none.
template <Module M>
[[nodiscard]] absl::StatusOr<TrainState> LoadLatestTrainingCheckpoint(
    const std::string& out_dir, M& model, Optimizer& optimizer);

// LatestCheckpointDir() is the directory `out_dir/latest` names; NotFound
// when there is no `latest` file.
[[nodiscard]] absl::StatusOr<std::string> LatestCheckpointDir(
    const std::string& out_dir);

// --- Implementation details follow ----------------------------------------

namespace checkpoint_internal {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kOptimizerFile[] = "optimizer.safetensors";

// MakeCheckpointDir() creates `out_dir/step-<step>` and returns its path.
[[nodiscard]] absl::StatusOr<std::string> MakeCheckpointDir(
    const std::string& out_dir, int64_t step);
// CommitLatest() points `out_dir/latest` at `checkpoint_dir` and removes all
// but the two newest checkpoints.
[[nodiscard]] absl::Status CommitLatest(const std::string& out_dir,
                                        const std::string& checkpoint_dir);
// ReadTrainState() reads the TrainState from a checkpoint's model file.
[[nodiscard]] absl::StatusOr<TrainState> ReadTrainState(
    const std::string& model_path);

}  // namespace checkpoint_internal

template <Module M>
absl::Status SaveTrainingCheckpoint(const std::string& out_dir, const M& model,
                                    const Optimizer& optimizer,
                                    const TrainState& state) {
  absl::StatusOr<std::string> dir =
      checkpoint_internal::MakeCheckpointDir(out_dir, state.step);
  if (!dir.ok()) return dir.status();
  KINDLING_RETURN_IF_ERROR(
      optimizer.Save(model, *dir + "/" + checkpoint_internal::kOptimizerFile));
  SaveOptions options;
  options.metadata = EncodeTrainState(state);
  KINDLING_RETURN_IF_ERROR(
      SaveModule(model, *dir + "/" + checkpoint_internal::kModelFile, options));
  return checkpoint_internal::CommitLatest(out_dir, *dir);
}

template <Module M>
absl::StatusOr<TrainState> LoadTrainingCheckpoint(
    const std::string& checkpoint_dir, M& model, Optimizer& optimizer) {
  const std::string model_path =
      checkpoint_dir + "/" + checkpoint_internal::kModelFile;
  absl::StatusOr<TrainState> state =
      checkpoint_internal::ReadTrainState(model_path);
  if (!state.ok()) return state.status();
  M staged = model;
  if (absl::StatusOr<LoadReport> report = LoadModule(staged, model_path);
      !report.ok()) {
    return report.status();
  }
  KINDLING_RETURN_IF_ERROR(optimizer.Load(
      staged, checkpoint_dir + "/" + checkpoint_internal::kOptimizerFile));
  model = std::move(staged);
  return state;
}

template <Module M>
absl::StatusOr<TrainState> LoadLatestTrainingCheckpoint(
    const std::string& out_dir, M& model, Optimizer& optimizer) {
  absl::StatusOr<std::string> dir = LatestCheckpointDir(out_dir);
  if (!dir.ok()) return dir.status();
  return LoadTrainingCheckpoint(*dir, model, optimizer);
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_CHECKPOINT_H_
