// Trainer<M, Loader>: the training loop for any model and any data set,
// small enough to read in one sitting.
//
//   // A step function: one batch's loss, on the autodiff graph.
//   auto step = [](const Regressor& m, const Pairs::Batch& batch,
//                  kindling::train::StepContext& context) {
//     return
//     kindling::nn::MseLoss(m.Forward(batch.x.to_device(context.device)),
//                                  batch.y.to_device(context.device));
//   };
//   kindling::data::DataLoader loader(pairs, {.batch_size = 32});
//   kindling::train::Trainer trainer(model, *optimizer, loader, step,
//                                    {.epochs = 5, .out_dir = "runs/reg"});
//   absl::StatusOr<kindling::train::TrainReport> report = trainer.Run();
//
// Each step: the step function's loss (forward in training mode), Backward(),
// one optimizer step (its schedule gives the learning rate). Each epoch ends
// with the evaluation function, if one was given (under NoGradGuard), and a
// training checkpoint (checkpoint.h) holding the model, the optimizer, the
// step and epoch counters, the loader's position (data order) and the random
// generator's position, so `resume` continues bit for bit as if the run had
// never stopped (same seeds and thread count). Ctrl-C (interrupt.h) and
// `max_steps` stop between two steps, after saving a checkpoint.
//
// The loss is summed on the model's device as the epoch runs and read back
// only when progress is printed and at the epoch's end, so a GPU is not
// synchronized every step (an `on_step` callback, which sees every loss,
// does synchronize).
//
// Image classification is one use of it: classifier.h gives a ready
// ClassifierTrainer (cross-entropy, test-set accuracy).
//
// Data parallel: with `communicator` set to a world of N ranks (every rank
// runs the same program with its own shard of the data: DataLoaderOptions'
// shard_index / shard_count), Run() first makes every rank start from rank
// 0's parameters and buffers (distributed/module_sync.h: lazy parameters
// initialize on rank 0 only), then each step averages the gradients over
// the ranks while backward runs (distributed/gradient_sync.h) and agrees on
// the mean loss and on whether to stop, in one small all-reduce. Only rank
// 0 prints progress and writes checkpoints (every rank's model is the
// same); it also evaluates alone, unless the evaluation is sharded
// (SetShardedEvaluation(): every rank then evaluates its shard, as
// ClassifierTrainer's test-set accuracy does). `resume` makes every rank
// load out_dir's latest checkpoint, so out_dir must be a path every rank
// reads (one machine, or a shared file system), and the ranks check they
// resumed the same step. The collective timeout must exceed rank 0's
// evaluation and checkpoint time, which the other ranks spend waiting in
// the next step.
//
// Stopping: SIGINT, SIGTERM and SIGUSR1 (interrupt.h) stop between two
// steps — on N ranks at the same step, agreed through the communicator —
// after rank 0 saved a checkpoint; TrainReport::stop_signal says which.
//
// Progress: progress.h (a live line on a terminal, plain lines otherwise).
// Devices: the model may live on any one device (ToDevice(model, cuda:0));
// the context names it, and the step function moves its batch there.
#ifndef KINDLING_TRAIN_TRAINER_H_
#define KINDLING_TRAIN_TRAINER_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/status_macros.h"
#include "kindling/data/loader_state.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/gradient_sync.h"
#include "kindling/distributed/module_sync.h"
#include "kindling/module/module_traits.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/batch_device.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/metrics.h"
#include "kindling/train/progress.h"
#include "kindling/train/step_phases.h"

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
  // dropout_seed seeds the Philox generator the step function draws from
  // (StepContext::rng: dropout and any other randomness of a step).
  uint64_t dropout_seed = 0;
  // eval_batch_size and label_smoothing are the image classification
  // adapter's (classifier.h): its test batches, and its cross-entropy's
  // smoothing (PyTorch's meaning).
  int64_t eval_batch_size = 1000;
  double label_smoothing = 0;
  ProgressOptions progress{};
  // on_step, when set, sees every step's loss (the run's step number, from
  // 1; with several ranks, this rank's loss). It reads the loss back to the
  // host every step.
  std::function<void(int64_t step, double loss)> on_step = nullptr;
  // communicator: train data-parallel over its ranks (see above); not
  // owned, must outlive Run(). Null or a world of one: this process alone.
  distributed::Communicator* communicator = nullptr;
  distributed::GradientSyncOptions gradient_sync{};
  // accumulation_steps: batches (micro-batches) per optimizer step. Each
  // micro-batch's loss is scaled by 1 / accumulation_steps and the
  // gradients summed, so k batches of b samples step as one batch of k x b
  // would; with several ranks the summed gradients are all-reduced once per
  // optimizer step. An epoch whose batches do not divide by k ends with a
  // step over the ones left (still scaled by 1 / k). Checkpoints and stops
  // fall between optimizer steps.
  int64_t accumulation_steps = 1;
  // time_phases: add up each step's seconds in the loader, the step
  // function, Backward() and the optimizer (TrainReport::phases,
  // step_phases.h). Four pairs of clock reads a step; off, none.
  bool time_phases = false;
};

// StepContext: what a step function gets besides the model and the batch.
// New members may be added; a step function that ignores them keeps
// compiling.
struct StepContext {
  // mode: kTraining in Run() and Step().
  nn::ForwardMode mode = nn::ForwardMode::kTraining;
  // rng: the run's generator (dropout), saved in checkpoints. With several
  // ranks each draws its own stream (the seed mixed with the rank), so the
  // ranks' shards of a global batch get different dropout masks, as one
  // process's batch would.
  PhiloxGenerator& rng;
  // step: the optimizer step this batch makes, from 1.
  int64_t step = 0;
  // device: where the model lives; move the batch there.
  Device device = Device::Cpu();
};

// EpochReport: one finished epoch.
struct EpochReport {
  int64_t epoch = 0;      // 0-based
  double train_loss = 0;  // mean over the epoch's steps run in this process
  Metrics metrics;        // the evaluation function's, if any
  double seconds = 0;     // training time, evaluation excluded
  // samples_per_second: of the whole job (this rank's rate times the
  // number of ranks, whose shards are equal).
  double samples_per_second = 0;

  // metric() is the metric called `name`, or NaN when there is none.
  double metric(std::string_view name) const {
    for (const auto& [key, value] : metrics) {
      if (key == name) return value;
    }
    return std::numeric_limits<double>::quiet_NaN();
  }
};

// TrainReport: what Run() did in this process.
struct TrainReport {
  std::vector<EpochReport> epochs;
  int64_t steps = 0;    // steps run in this process
  int64_t samples = 0;  // samples trained on in this process
  double train_seconds = 0;
  // stopped_early: a signal or max_steps ended the run before `epochs`.
  bool stopped_early = false;
  // stop_signal: the signal that stopped it (SIGINT, SIGTERM, SIGUSR1; on
  // any rank), 0 if none did.
  int stop_signal = 0;
  // communication: the data-parallel gradient all-reduces (zero alone).
  distributed::GradientSyncStats communication;
  // resumed_from: the checkpoint directory the run continued from, if any.
  std::string resumed_from;
  TrainState final_state;
  // phases: with TrainerOptions::time_phases, where the steps' time went
  // (all zero without).
  StepPhases phases;

  double samples_per_second() const {
    return train_seconds > 0 ? samples / train_seconds : 0;
  }
};

// BatchLoader: what the Trainer needs of a loader (data::DataLoader<D> is
// one): batches in epochs, a resumable position, and a count of samples per
// batch (SamplesOf).
template <class L>
concept BatchLoader = requires(L& loader, const L& const_loader,
                               const data::LoaderState& state) {
  typename L::BatchType;
  { loader.Next() } -> std::same_as<std::optional<typename L::BatchType>>;
  { const_loader.state() } -> std::same_as<data::LoaderState>;
  { loader.Restore(state) } -> std::same_as<absl::Status>;
  { const_loader.batches_per_epoch() } -> std::convertible_to<int64_t>;
  { const_loader.batch_index() } -> std::convertible_to<int64_t>;
};

template <Module M, BatchLoader Loader>
class Trainer {
 public:
  using BatchType = typename Loader::BatchType;
  // StepFn: one batch's scalar loss, computed on the autodiff graph.
  using StepFn = std::function<Tensor<0>(const M& model, const BatchType& batch,
                                         StepContext& context)>;
  // EvalFn: the model's metrics, called under NoGradGuard at each epoch's
  // end (it runs the model in inference mode itself); may be empty. With
  // several ranks rank 0 alone calls it; the others wait.
  using EvalFn = std::function<Metrics(const M& model)>;
  // ShardedEvalFn: an evaluation that can be split over ranks: its figures
  // on shard `shard` of the evaluation data, as sums and weights (metrics.h).
  // Set with SetShardedEvaluation(), it replaces EvalFn: with several ranks
  // every rank evaluates its shard at each epoch's end and the figures are
  // added over the ranks, so each rank's EpochReport holds them.
  using ShardedEvalFn =
      std::function<MetricSums(const M& model, EvalShard shard)>;

  // The trainer keeps references to model, optimizer and loader.
  Trainer(M& model, Optimizer& optimizer, Loader& loader, StepFn step,
          TrainerOptions options, EvalFn evaluate = nullptr)
      : model_(model),
        optimizer_(optimizer),
        loader_(loader),
        step_(std::move(step)),
        evaluate_(std::move(evaluate)),
        options_(std::move(options)),
        rng_(options_.dropout_seed) {}

  // Run() trains until `epochs` are done (or max_steps / Ctrl-C).
  [[nodiscard]] absl::StatusOr<TrainReport> Run();

  // Step() trains on one batch and returns its loss (read back to the
  // host; this rank's). InvalidArgument when the model is spread over
  // several devices.
  [[nodiscard]] absl::StatusOr<double> Step(const BatchType& batch) {
    KINDLING_RETURN_IF_ERROR(StartDistributed());
    absl::StatusOr<Tensor<0>> loss = StepOnDevice(batch);
    if (!loss.ok()) return loss.status();
    return static_cast<double>(loss->template item<float>());
  }

  // SetShardedEvaluation() makes `evaluate` the evaluation (see
  // ShardedEvalFn); null goes back to the EvalFn given at construction.
  void SetShardedEvaluation(ShardedEvalFn evaluate) {
    sharded_evaluate_ = std::move(evaluate);
  }

  // Evaluate() is the evaluation's metrics on the whole evaluation data, in
  // this process alone (empty without an evaluation).
  Metrics Evaluate() const {
    NoGradGuard no_grad;
    if (sharded_evaluate_) return MeansOf(sharded_evaluate_(model_, {}));
    if (!evaluate_) return {};
    return evaluate_(model_);
  }

  // options() may be changed between two Run()s (e.g. a larger max_steps).
  TrainerOptions& options() { return options_; }

  // state() is where the run is now (what a checkpoint saves).
  TrainState state() const {
    return TrainState{.epoch = loader_.state().epoch,
                      .step = optimizer_.step_count(),
                      .loader = loader_.state(),
                      .dropout = rng_.state()};
  }

  // is_root() is true on rank 0 (and alone): the rank that prints and
  // saves, and runs an EvalFn.
  bool is_root() const {
    return Distributed() == nullptr || Distributed()->rank() == 0;
  }

  // Save() writes a training checkpoint of state() to out_dir.
  [[nodiscard]] absl::Status Save() const {
    return SaveTrainingCheckpoint(options_.out_dir, model_, optimizer_,
                                  state());
  }

  // Resume() restores out_dir's latest checkpoint into model, optimizer,
  // loader and random generator; returns its directory (NotFound if none).
  [[nodiscard]] absl::StatusOr<std::string> Resume();

 protected:
  M& model() const { return model_; }

 private:
  using Clock = std::chrono::steady_clock;

  // StepOnDevice() runs one step and returns the loss, still on the device
  // (detached from the graph).
  absl::StatusOr<Tensor<0>> StepOnDevice(const BatchType& batch);
  // AccumulateOnDevice() runs forward and backward of one micro-batch with
  // its loss scaled by `scale`, adds the gradients to `sum` (recording the
  // order backward produced them on the first), and returns the unscaled
  // loss on the device.
  absl::StatusOr<Tensor<0>> AccumulateOnDevice(const BatchType& batch,
                                               double scale,
                                               std::optional<Gradients>& sum,
                                               std::vector<ParamId>& order);
  // StepResult: one optimizer step's mean loss (on the device), the samples
  // it trained on, and whether the epoch ended inside it.
  struct StepResult {
    Tensor<0> loss;
    int64_t samples = 0;
    bool epoch_ended = false;
  };
  // TrainStep() makes one optimizer step from the loader's next batches
  // (accumulation_steps of them, fewer at the epoch's end); nullopt when
  // the epoch is over before it.
  absl::StatusOr<std::optional<StepResult>> TrainStep();
  // StepAccumulated() averages `sum` over the ranks (in `order`) and makes
  // one optimizer step with it.
  absl::Status StepAccumulated(Gradients& sum,
                               const std::vector<ParamId>& order);
  absl::StatusOr<bool> RunEpoch(TrainReport& report, ProgressPrinter& progress);
  // PhaseSeconds() is where `phase`'s seconds add up while
  // TrainerOptions::time_phases is on inside Run(), else null.
  double* PhaseSeconds(double StepPhases::*phase) {
    return phases_ == nullptr ? nullptr : &(phases_->*phase);
  }
  // Timed() returns f(), its seconds added to `phase` (PhaseSeconds()).
  template <class F>
  decltype(auto) Timed(double StepPhases::*phase, F&& f) {
    PhaseClock clock(PhaseSeconds(phase));
    return f();
  }
  // EvaluateEpoch() is an epoch's metrics: Evaluate() on rank 0 (empty on
  // the others), or with a sharded evaluation every rank's shard added up.
  absl::StatusOr<Metrics> EvaluateEpoch() const {
    distributed::Communicator* comm = Distributed();
    if (comm == nullptr || !sharded_evaluate_) {
      return is_root() ? Evaluate() : Metrics{};
    }
    NoGradGuard no_grad;
    return AddAcrossRanks(
        sharded_evaluate_(model_, {comm->rank(), comm->world_size()}), *comm);
  }
  bool ShouldStop() const {
    return InterruptRequested() ||
           (options_.max_steps > 0 &&
            optimizer_.step_count() >= options_.max_steps);
  }
  absl::Status SaveIfConfigured() const {
    return options_.out_dir.empty() || !is_root() ? absl::OkStatus() : Save();
  }
  int WorldSize() const {
    return Distributed() == nullptr ? 1 : Distributed()->world_size();
  }
  // Distributed() is the communicator when there are several ranks.
  distributed::Communicator* Distributed() const {
    distributed::Communicator* comm = options_.communicator;
    return comm != nullptr && comm->world_size() > 1 ? comm : nullptr;
  }
  // StartDistributed() broadcasts rank 0's model and starts the gradient
  // synchronization, once (nothing alone).
  absl::Status StartDistributed();
  // AgreeOnStep() all-reduces this rank's loss and stop request: the mean
  // loss over ranks, and whether any rank asked to stop. Alone, it returns
  // them as they are.
  absl::StatusOr<std::pair<double, bool>> AgreeOnStep(double loss, bool stop);
  // AgreeOnStopSignal() is the signal that stopped the run on any rank
  // (the highest number when several did: SIGTERM over SIGUSR1 over
  // SIGINT), so every rank reports the same; 0 for max_steps.
  absl::StatusOr<int> AgreeOnStopSignal() {
    int64_t signal = InterruptSignal();
    if (distributed::Communicator* comm = Distributed()) {
      KINDLING_RETURN_IF_ERROR(comm->AllReduceHost(
          &signal, 1, DType::kI64, distributed::ReduceOp::kMax));
    }
    return static_cast<int>(signal);
  }
  // AgreeOnResume() checks every rank resumed the same step.
  absl::Status AgreeOnResume() const;
  // SeedForRank() gives rank r the dropout seed dropout_seed_ mixed with r
  // (rank 0 keeps it, so its checkpoints hold the run's seed), keeping the
  // position: every rank draws as many numbers per step.
  void SeedForRank() {
    distributed::Communicator* comm = Distributed();
    const uint64_t rank = comm == nullptr ? 0 : comm->rank();
    rng_.set_state({.seed = dropout_seed_ ^ (rank * 0x9E3779B97F4A7C15ull),
                    .offset = rng_.offset()});
  }

  M& model_;
  Optimizer& optimizer_;
  Loader& loader_;
  StepFn step_;
  EvalFn evaluate_;
  ShardedEvalFn sharded_evaluate_;
  TrainerOptions options_;
  PhiloxGenerator rng_;
  uint64_t dropout_seed_ = options_.dropout_seed;
  std::unique_ptr<distributed::GradientSync> sync_;
  // phases_: the running Run()'s report's phases while time_phases is on,
  // else null (Step() outside Run() is not timed).
  StepPhases* phases_ = nullptr;
};

// Deduces Trainer<M, Loader> from the model and the loader, whatever the
// step and evaluation functions are (lambdas convert to StepFn / EvalFn):
//   kindling::train::Trainer trainer(model, optimizer, loader, step, {...});
template <Module M, BatchLoader Loader, class Step>
Trainer(M&, Optimizer&, Loader&, Step, TrainerOptions) -> Trainer<M, Loader>;
template <Module M, BatchLoader Loader, class Step, class Eval>
Trainer(M&, Optimizer&, Loader&, Step, TrainerOptions, Eval)
    -> Trainer<M, Loader>;

// SamplesOf() is how many samples a batch holds: its size() when it has
// one, else 1.
template <class B>
int64_t SamplesOf(const B& batch) {
  if constexpr (requires { batch.size(); }) {
    return static_cast<int64_t>(batch.size());
  } else {
    return 1;
  }
}

template <Module M, BatchLoader Loader>
absl::StatusOr<Tensor<0>> Trainer<M, Loader>::StepOnDevice(
    const BatchType& batch) {
  const absl::StatusOr<Device> device = ModelDevice(model_);
  if (!device.ok()) return device.status();
  StepContext context{.mode = nn::ForwardMode::kTraining,
                      .rng = rng_,
                      .step = optimizer_.step_count() + 1,
                      .device = *device};
  const Tensor<0> loss = Timed(&StepPhases::forward,
                               [&] { return step_(model_, batch, context); });
  BackwardOptions backward;
  if (sync_ != nullptr) backward.on_gradient_ready = sync_->Hook();
  const Gradients grads =
      Timed(&StepPhases::backward, [&] { return Backward(loss, backward); });
  if (sync_ != nullptr) {
    KINDLING_RETURN_IF_ERROR(
        Timed(&StepPhases::backward, [&] { return sync_->Finish(); }));
  }
  KINDLING_RETURN_IF_ERROR(Timed(
      &StepPhases::optimizer, [&] { return optimizer_.Step(model_, grads); }));
  return loss.detach();
}

template <Module M, BatchLoader Loader>
absl::StatusOr<Tensor<0>> Trainer<M, Loader>::AccumulateOnDevice(
    const BatchType& batch, double scale, std::optional<Gradients>& sum,
    std::vector<ParamId>& order) {
  const absl::StatusOr<Device> device = ModelDevice(model_);
  if (!device.ok()) return device.status();
  StepContext context{.mode = nn::ForwardMode::kTraining,
                      .rng = rng_,
                      .step = optimizer_.step_count() + 1,
                      .device = *device};
  const Tensor<0> loss = Timed(&StepPhases::forward,
                               [&] { return step_(model_, batch, context); });
  PhaseClock backward_clock(PhaseSeconds(&StepPhases::backward));
  BackwardOptions backward;
  const bool first = !sum.has_value();
  if (first) {
    backward.on_gradient_ready = [&order](ParamId id, const TensorBase&) {
      order.push_back(id);
    };
  }
  Gradients grads = Backward(loss * scale, backward);
  if (first) {
    sum = std::move(grads);
  } else {
    NoGradGuard no_grad;
    for (const ParamId& id : order) {
      std::optional<TensorBase> more = grads.Get(id);
      std::optional<TensorBase> so_far = sum->Get(id);
      if (more.has_value() && so_far.has_value()) {
        sum->Set(id, ops::Binary(BinaryOp::kAdd, *so_far, *more));
      }
    }
  }
  return loss.detach();
}

template <Module M, BatchLoader Loader>
absl::StatusOr<std::optional<typename Trainer<M, Loader>::StepResult>>
Trainer<M, Loader>::TrainStep() {
  const int64_t accumulate = std::max<int64_t>(options_.accumulation_steps, 1);
  std::optional<Gradients> sum;  // the micro-batches' gradients so far
  std::vector<ParamId> order;    // the order backward produced them
  std::optional<Tensor<0>> loss_sum;
  StepResult result;
  int64_t micro = 0;
  while (micro < accumulate) {
    std::optional<BatchType> batch =
        Timed(&StepPhases::data, [&] { return loader_.Next(); });
    if (!batch.has_value()) {
      result.epoch_ended = true;
      break;
    }
    result.samples += SamplesOf(*batch);
    if (accumulate == 1) {
      absl::StatusOr<Tensor<0>> loss = StepOnDevice(*batch);
      if (!loss.ok()) return loss.status();
      result.loss = *std::move(loss);
      return result;
    }
    absl::StatusOr<Tensor<0>> loss =
        AccumulateOnDevice(*batch, 1.0 / accumulate, sum, order);
    if (!loss.ok()) return loss.status();
    NoGradGuard no_grad;
    loss_sum = loss_sum.has_value() ? *loss_sum + *loss : *loss;
    ++micro;
  }
  if (micro == 0) return std::nullopt;
  KINDLING_RETURN_IF_ERROR(StepAccumulated(*sum, order));
  NoGradGuard no_grad;
  result.loss = *loss_sum * (1.0 / micro);
  return result;
}

template <Module M, BatchLoader Loader>
absl::Status Trainer<M, Loader>::StepAccumulated(
    Gradients& sum, const std::vector<ParamId>& order) {
  if (sync_ != nullptr) {
    PhaseClock clock(PhaseSeconds(&StepPhases::backward));
    for (const ParamId& id : order) {
      if (std::optional<TensorBase> grad = sum.Get(id)) {
        sync_->OnGradientReady(*grad);
      }
    }
    KINDLING_RETURN_IF_ERROR(sync_->Finish());
  }
  return Timed(&StepPhases::optimizer,
               [&] { return optimizer_.Step(model_, sum); });
}

template <Module M, BatchLoader Loader>
absl::Status Trainer<M, Loader>::StartDistributed() {
  distributed::Communicator* comm = Distributed();
  if (comm == nullptr || sync_ != nullptr) return absl::OkStatus();
  SeedForRank();
  KINDLING_RETURN_IF_ERROR(distributed::BroadcastModule(model_, *comm));
  sync_ = std::make_unique<distributed::GradientSync>(*comm,
                                                      options_.gradient_sync);
  return absl::OkStatus();
}

template <Module M, BatchLoader Loader>
absl::StatusOr<std::pair<double, bool>> Trainer<M, Loader>::AgreeOnStep(
    double loss, bool stop) {
  distributed::Communicator* comm = Distributed();
  if (comm == nullptr) return std::make_pair(loss, stop);
  double values[2] = {loss, stop ? 1.0 : 0.0};
  KINDLING_RETURN_IF_ERROR(
      comm->AllReduceHost(values, 2, DType::kF64, distributed::ReduceOp::kSum));
  return std::make_pair(values[0] / comm->world_size(), values[1] > 0);
}

template <Module M, BatchLoader Loader>
absl::Status Trainer<M, Loader>::AgreeOnResume() const {
  distributed::Communicator* comm = Distributed();
  if (comm == nullptr) return absl::OkStatus();
  const int64_t step = optimizer_.step_count();
  int64_t extremes[2] = {step, -step};  // max of both: the max and the min
  KINDLING_RETURN_IF_ERROR(comm->AllReduceHost(extremes, 2, DType::kI64,
                                               distributed::ReduceOp::kMax));
  if (extremes[0] != -extremes[1]) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "resume: the ranks resumed different steps (from %d to %d; rank %d "
        "at %d); every rank must read the same out_dir (%s), on one machine "
        "or a shared file system",
        -extremes[1], extremes[0], comm->rank(), step, options_.out_dir));
  }
  return absl::OkStatus();
}

template <Module M, BatchLoader Loader>
absl::StatusOr<std::string> Trainer<M, Loader>::Resume() {
  absl::StatusOr<std::string> dir = LatestCheckpointDir(options_.out_dir);
  if (!dir.ok()) return dir.status();
  absl::StatusOr<TrainState> state =
      LoadTrainingCheckpoint(*dir, model_, optimizer_);
  if (!state.ok()) return state.status();
  KINDLING_RETURN_IF_ERROR(loader_.Restore(state->loader));
  rng_.set_state(state->dropout);
  dropout_seed_ = state->dropout.seed;  // rank 0's, which saved it
  SeedForRank();
  return *dir;
}

// RunEpoch() trains the loader's current epoch until it ends (true) or the
// run must stop (false, checkpoint saved).
template <Module M, BatchLoader Loader>
absl::StatusOr<bool> Trainer<M, Loader>::RunEpoch(TrainReport& report,
                                                  ProgressPrinter& progress) {
  const int64_t epoch = loader_.state().epoch;
  progress.StartEpoch();
  // Alone, the loss is summed on the model's device and read back only
  // when a line is printed; with several ranks each step's mean over ranks
  // comes back with the stop agreement.
  std::optional<Tensor<0>> loss_sum;
  double global_loss_sum = 0;
  const bool distributed = Distributed() != nullptr;
  int64_t steps = 0;
  int64_t samples = 0;
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::pair<double, bool>> agreed = AgreeOnStep(0, ShouldStop());
  if (!agreed.ok()) return agreed.status();
  bool stop = agreed->second;
  auto mean_loss = [&]() -> double {
    if (steps == 0) return 0.0;
    return distributed ? global_loss_sum / steps
                       : loss_sum->template item<float>() / steps;
  };
  while (!stop) {
    absl::StatusOr<std::optional<StepResult>> step = TrainStep();
    if (!step.ok()) return step.status();
    if (!step->has_value()) break;
    const Tensor<0>& loss = (*step)->loss;
    if (options_.on_step) {
      options_.on_step(optimizer_.step_count(), loss.template item<float>());
    }
    if (distributed) {
      agreed = AgreeOnStep(loss.template item<float>(), ShouldStop());
      if (!agreed.ok()) return agreed.status();
      global_loss_sum += agreed->first;
      stop = agreed->second;
    } else {
      NoGradGuard no_grad;
      loss_sum = loss_sum.has_value() ? *loss_sum + loss : loss;
      stop = ShouldStop();
    }
    ++steps;
    samples += (*step)->samples;
    const int64_t step_in_epoch = loader_.batch_index() + 1;
    progress.OnStep(epoch, step_in_epoch, optimizer_.step_count(), mean_loss,
                    (*step)->samples);
    if ((*step)->epoch_ended) break;
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  report.steps += steps;
  report.samples += samples;
  report.train_seconds += seconds;
  if (sync_ != nullptr) report.communication = sync_->stats();
  if (stop) {
    report.stopped_early = true;
    absl::StatusOr<int> signal = AgreeOnStopSignal();
    if (!signal.ok()) return signal.status();
    report.stop_signal = *signal;
    KINDLING_RETURN_IF_ERROR(SaveIfConfigured());
    progress.Line(absl::StrFormat(
        "stopped at epoch %d, step %d%s", epoch + 1, optimizer_.step_count(),
        options_.out_dir.empty() ? ""
                                 : "; checkpoint saved, --resume continues"));
    return false;
  }
  absl::StatusOr<Metrics> metrics = EvaluateEpoch();
  if (!metrics.ok()) return metrics.status();
  EpochReport epoch_report{
      .epoch = epoch,
      .train_loss = mean_loss(),
      .metrics = *std::move(metrics),
      .seconds = seconds,
      .samples_per_second = seconds > 0 ? samples * WorldSize() / seconds : 0};
  report.epochs.push_back(epoch_report);
  KINDLING_RETURN_IF_ERROR(SaveIfConfigured());
  std::string line = absl::StrFormat("epoch %d/%d: train loss %.4f", epoch + 1,
                                     options_.epochs, epoch_report.train_loss);
  for (const auto& [name, value] : epoch_report.metrics) {
    absl::StrAppendFormat(&line, ", %s %.4f", name, value);
  }
  absl::StrAppendFormat(&line, ", %.1f s, %.0f samples/s", seconds,
                        epoch_report.samples_per_second);
  progress.Line(line);
  return true;
}

template <Module M, BatchLoader Loader>
absl::StatusOr<TrainReport> Trainer<M, Loader>::Run() {
  TrainReport report;
  if (options_.resume && !options_.out_dir.empty()) {
    absl::StatusOr<std::string> resumed = Resume();
    if (resumed.ok()) {
      report.resumed_from = *resumed;
    } else if (!absl::IsNotFound(resumed.status())) {
      return resumed.status();
    }
  }
  KINDLING_RETURN_IF_ERROR(AgreeOnResume());
  KINDLING_RETURN_IF_ERROR(StartDistributed());
  const int64_t steps_per_epoch = loader_.batches_per_epoch();
  int64_t total_steps = options_.epochs * steps_per_epoch;
  if (options_.max_steps > 0) {
    total_steps = std::min(total_steps, options_.max_steps);
  }
  ProgressOptions progress_options = options_.progress;
  if (!is_root()) progress_options.quiet = true;
  ProgressPrinter progress(options_.epochs, steps_per_epoch, total_steps,
                           progress_options);
  if (!report.resumed_from.empty()) {
    progress.Line(absl::StrFormat("resumed from %s (epoch %d, step %d)",
                                  report.resumed_from, state().epoch + 1,
                                  state().step));
  }
  absl::StatusOr<bool> finished = true;
  phases_ = options_.time_phases ? &report.phases : nullptr;
  while (loader_.state().epoch < options_.epochs) {
    finished = RunEpoch(report, progress);
    if (!finished.ok() || !*finished) break;
  }
  phases_ = nullptr;
  if (!finished.ok()) return finished.status();
  report.final_state = state();
  return report;
}

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_TRAINER_H_
