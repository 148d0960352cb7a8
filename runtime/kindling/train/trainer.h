// Trainer: the classification training loop, small enough to read in one
// sitting and to copy when a model needs something else.
//
//   kindling::train::Trainer<Mlp> trainer(
//       model, *optimizer, loader, test_set,
//       [](const Mlp& m, const data::Batch& batch, nn::ForwardMode mode,
//          PhiloxGenerator& dropout) { return m.Forward(batch.images); },
//       {.epochs = 5, .out_dir = "runs/mlp", .resume = true});
//   absl::StatusOr<TrainReport> report = trainer.Run();
//
// Each step: forward in training mode, cross-entropy, Backward(), one
// optimizer step (its schedule gives the learning rate). Each epoch ends with
// the test accuracy (under NoGradGuard, in inference mode) and a training
// checkpoint (checkpoint.h) holding the model, the optimizer, the step and
// epoch counters, the loader's position (data order) and the dropout
// generator's position, so `resume` continues bit for bit as if the run had
// never stopped (same seeds and thread count). Ctrl-C (interrupt.h) and
// `max_steps` stop between two steps, after saving a checkpoint.
//
// Progress: progress.h (a live line on a terminal, plain lines otherwise).
//
// Devices: the model may live on any one device (ToDevice(model, cuda:0)):
// each batch is moved there before its step, and each test batch before its
// evaluation; the optimizer's state follows the parameters.
#ifndef KINDLING_TRAIN_TRAINER_H_
#define KINDLING_TRAIN_TRAINER_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/status_macros.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/image_dataset.h"
#include "kindling/module/module_traits.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/accuracy.h"
#include "kindling/train/batch_device.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/progress.h"

namespace kindling::train {

struct TrainerOptions {
  int64_t epochs = 1;
  // max_steps > 0 stops the run (with a checkpoint) once this many optimizer
  // steps have run in total, counting steps before a resume.
  int64_t max_steps = 0;
  // out_dir: where checkpoints go; empty saves none.
  std::string out_dir{};
  // resume: continue from out_dir's latest checkpoint when there is one.
  bool resume = false;
  // dropout_seed seeds the Philox generator dropout draws from.
  uint64_t dropout_seed = 0;
  int64_t eval_batch_size = 1000;
  // label_smoothing of the cross-entropy (PyTorch's meaning).
  double label_smoothing = 0;
  ProgressOptions progress{};
  // on_step, when set, sees every step's loss (the run's step number, from 1).
  std::function<void(int64_t step, double loss)> on_step = nullptr;
};

// EpochReport: one finished epoch.
struct EpochReport {
  int64_t epoch = 0;      // 0-based
  double train_loss = 0;  // mean over the epoch's steps run in this process
  double test_accuracy = 0;
  double seconds = 0;  // training time, evaluation excluded
  double samples_per_second = 0;
};

// TrainReport: what Run() did in this process.
struct TrainReport {
  std::vector<EpochReport> epochs;
  int64_t steps = 0;    // steps run in this process
  int64_t samples = 0;  // samples trained on in this process
  double train_seconds = 0;
  // stopped_early: Ctrl-C or max_steps ended the run before `epochs`.
  bool stopped_early = false;
  // resumed_from: the checkpoint directory the run continued from, if any.
  std::string resumed_from;
  TrainState final_state;

  double samples_per_second() const {
    return train_seconds > 0 ? samples / train_seconds : 0;
  }
};

// EvaluateAccuracy() is the fraction of `test_set` whose argmax logit is the
// label, in inference mode under NoGradGuard (no graph is recorded), in
// batches of `batch_size`. `forward` is a Trainer's ForwardFn.
template <Module M, class ForwardFn>
double EvaluateAccuracy(const M& model, const data::ImageDataset& test_set,
                        const ForwardFn& forward, int64_t batch_size = 1000) {
  const int64_t n = test_set.labels.dim(0);
  NoGradGuard no_grad;
  PhiloxGenerator unused(0);  // inference draws nothing
  // Batches go to the model's device; a model spread over several devices
  // gets them where they are (its forward decides).
  const absl::StatusOr<Device> device = ModelDevice(model);
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    const int64_t size = std::min(batch_size, n - begin);
    data::Batch batch{.images = test_set.images.narrow(0, begin, size),
                      .labels = test_set.labels.narrow(0, begin, size),
                      .channels = test_set.channels,
                      .rows = test_set.rows,
                      .cols = test_set.cols};
    if (device.ok()) batch = BatchOnDevice(batch, *device);
    correct +=
        CountCorrect(forward(model, batch, nn::ForwardMode::kInference, unused),
                     batch.labels);
  }
  return n > 0 ? static_cast<double>(correct) / n : 0;
}

template <Module M>
class Trainer {
 public:
  // ForwardFn gives a batch's logits [B, classes].
  using ForwardFn =
      std::function<Tensor<2>(const M& model, const data::Batch& batch,
                              nn::ForwardMode mode, PhiloxGenerator& dropout)>;

  // The trainer keeps references to model, optimizer and loader, and a
  // handle to the test set (a null images tensor skips evaluation).
  Trainer(M& model, Optimizer& optimizer, data::DataLoader& loader,
          data::ImageDataset test_set, ForwardFn forward,
          TrainerOptions options)
      : model_(model),
        optimizer_(optimizer),
        loader_(loader),
        test_set_(std::move(test_set)),
        forward_(std::move(forward)),
        options_(std::move(options)),
        dropout_(options_.dropout_seed) {}

  // Run() trains until `epochs` are done (or max_steps / Ctrl-C).
  [[nodiscard]] absl::StatusOr<TrainReport> Run();

  // Step() trains on one batch and returns its loss. The batch is moved to
  // the model's device first (batch_device.h); InvalidArgument when the
  // model is spread over several devices.
  [[nodiscard]] absl::StatusOr<double> Step(const data::Batch& batch);

  // Evaluate() is the test set accuracy, in inference mode, without a graph.
  double Evaluate() const;

  // options() may be changed between two Run()s (e.g. a larger max_steps).
  TrainerOptions& options() { return options_; }

  // state() is where the run is now (what a checkpoint saves).
  TrainState state() const {
    return TrainState{.epoch = loader_.state().epoch,
                      .step = optimizer_.step_count(),
                      .loader = loader_.state(),
                      .dropout = dropout_.state()};
  }

  // Save() writes a training checkpoint of state() to out_dir.
  [[nodiscard]] absl::Status Save() const {
    return SaveTrainingCheckpoint(options_.out_dir, model_, optimizer_,
                                  state());
  }

  // Resume() restores out_dir's latest checkpoint into model, optimizer,
  // loader and dropout generator; returns its directory (NotFound if none).
  [[nodiscard]] absl::StatusOr<std::string> Resume();

 private:
  using Clock = std::chrono::steady_clock;
  bool ShouldStop() const {
    return InterruptRequested() ||
           (options_.max_steps > 0 &&
            optimizer_.step_count() >= options_.max_steps);
  }
  absl::Status SaveIfConfigured() const {
    return options_.out_dir.empty() ? absl::OkStatus() : Save();
  }

  M& model_;
  Optimizer& optimizer_;
  data::DataLoader& loader_;
  data::ImageDataset test_set_;
  ForwardFn forward_;
  TrainerOptions options_;
  PhiloxGenerator dropout_;
};

template <Module M>
absl::StatusOr<double> Trainer<M>::Step(const data::Batch& host_batch) {
  const absl::StatusOr<Device> device = ModelDevice(model_);
  if (!device.ok()) return device.status();
  const data::Batch batch = BatchOnDevice(host_batch, *device);
  const Tensor<2> logits =
      forward_(model_, batch, nn::ForwardMode::kTraining, dropout_);
  const Tensor<0> loss =
      nn::CrossEntropy(logits, batch.labels, options_.label_smoothing);
  const Gradients grads = Backward(loss);
  KINDLING_RETURN_IF_ERROR(optimizer_.Step(model_, grads));
  return static_cast<double>(loss.item<float>());
}

template <Module M>
double Trainer<M>::Evaluate() const {
  return EvaluateAccuracy(model_, test_set_, forward_,
                          options_.eval_batch_size);
}

template <Module M>
absl::StatusOr<std::string> Trainer<M>::Resume() {
  absl::StatusOr<std::string> dir = LatestCheckpointDir(options_.out_dir);
  if (!dir.ok()) return dir.status();
  absl::StatusOr<TrainState> state =
      LoadTrainingCheckpoint(*dir, model_, optimizer_);
  if (!state.ok()) return state.status();
  KINDLING_RETURN_IF_ERROR(loader_.Restore(state->loader));
  dropout_.set_state(state->dropout);
  return *dir;
}

template <Module M>
absl::StatusOr<TrainReport> Trainer<M>::Run() {
  TrainReport report;
  if (options_.resume && !options_.out_dir.empty()) {
    absl::StatusOr<std::string> resumed = Resume();
    if (resumed.ok()) {
      report.resumed_from = *resumed;
    } else if (!absl::IsNotFound(resumed.status())) {
      return resumed.status();
    }
  }
  const int64_t steps_per_epoch = loader_.batches_per_epoch();
  int64_t total_steps = options_.epochs * steps_per_epoch;
  if (options_.max_steps > 0) {
    total_steps = std::min(total_steps, options_.max_steps);
  }
  ProgressPrinter progress(options_.epochs, steps_per_epoch, total_steps,
                           options_.progress);
  if (!report.resumed_from.empty()) {
    progress.Line(absl::StrFormat("resumed from %s (epoch %d, step %d)",
                                  report.resumed_from, state().epoch + 1,
                                  state().step));
  }
  while (loader_.state().epoch < options_.epochs) {
    const int64_t epoch = loader_.state().epoch;
    progress.StartEpoch();
    double loss_sum = 0;
    int64_t steps = 0;
    int64_t samples = 0;
    const Clock::time_point start = Clock::now();
    bool stop = ShouldStop();
    while (!stop) {
      std::optional<data::Batch> batch = loader_.Next();
      if (!batch.has_value()) break;
      absl::StatusOr<double> loss = Step(*batch);
      if (!loss.ok()) return loss.status();
      loss_sum += *loss;
      ++steps;
      samples += batch->size();
      if (options_.on_step) options_.on_step(optimizer_.step_count(), *loss);
      progress.OnStep(epoch, batch->index + 1, optimizer_.step_count(), *loss,
                      batch->size());
      stop = ShouldStop();
    }
    const double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    report.steps += steps;
    report.samples += samples;
    report.train_seconds += seconds;
    if (stop) {
      report.stopped_early = true;
      KINDLING_RETURN_IF_ERROR(SaveIfConfigured());
      progress.Line(absl::StrFormat(
          "stopped at epoch %d, step %d%s", epoch + 1, optimizer_.step_count(),
          options_.out_dir.empty() ? ""
                                   : "; checkpoint saved, --resume continues"));
      break;
    }
    EpochReport epoch_report{
        .epoch = epoch,
        .train_loss = steps > 0 ? loss_sum / steps : 0,
        .test_accuracy = test_set_.images.defined() ? Evaluate() : 0,
        .seconds = seconds,
        .samples_per_second = seconds > 0 ? samples / seconds : 0};
    report.epochs.push_back(epoch_report);
    KINDLING_RETURN_IF_ERROR(SaveIfConfigured());
    progress.Line(absl::StrFormat(
        "epoch %d/%d: train loss %.4f, test accuracy %.4f, %.1f s, %.0f "
        "samples/s",
        epoch + 1, options_.epochs, epoch_report.train_loss,
        epoch_report.test_accuracy, seconds, epoch_report.samples_per_second));
  }
  report.final_state = state();
  return report;
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_TRAINER_H_
