// ClassifierTrainer<M>: the Trainer (trainer.h) for image classification,
// ready made: cross-entropy on a forward function's logits, and test-set
// accuracy after each epoch (with several ranks, each evaluates a shard of
// the test set).
//
//   kindling::train::ClassifierTrainer<Mlp> trainer(
//       model, *optimizer, loader, test_set,
//       [](const Mlp& m, const data::Batch& batch, nn::ForwardMode mode,
//          PhiloxGenerator& dropout) { return m.Forward(batch.images); },
//       {.epochs = 5, .out_dir = "runs/mlp", .resume = true});
//   absl::StatusOr<TrainReport> report = trainer.Run();
//   report->epochs.back().metric("test_accuracy");
//
// Each batch is moved to the model's device before the forward function
// sees it (batch_device.h), and so is each test batch.
#ifndef KINDLING_TRAIN_CLASSIFIER_H_
#define KINDLING_TRAIN_CLASSIFIER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

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
#include "kindling/train/metrics.h"
#include "kindling/train/trainer.h"

namespace kindling::train {

// ClassifierForwardFn<M>: a batch's logits [B, classes].
template <Module M>
using ClassifierForwardFn =
    std::function<Tensor<2>(const M& model, const data::Batch& batch,
                            nn::ForwardMode mode, PhiloxGenerator& dropout)>;

// AccuracySum() is shard `shard` of the test-set accuracy: its correct
// predictions (argmax logit == label) over its examples, in inference mode
// under NoGradGuard (no graph is recorded), in batches of `batch_size`, each
// moved to the model's device. Shards take whole batches of the unsharded
// evaluation, so each batch's logits are the ones it computes.
template <Module M, class ForwardFn>
MetricSum AccuracySum(const M& model, const data::ImageDataset& test_set,
                      const ForwardFn& forward, int64_t batch_size = 1000,
                      EvalShard shard = {}) {
  const int64_t n = test_set.labels.dim(0);
  batch_size = std::max<int64_t>(batch_size, 1);  // as accumulation_steps
  const auto [first_batch, end_batch] =
      shard.Range((n + batch_size - 1) / batch_size);
  NoGradGuard no_grad;
  PhiloxGenerator unused(0);  // inference draws nothing
  // A model spread over several devices gets the batches where they are
  // (its forward decides).
  const absl::StatusOr<Device> device = ModelDevice(model);
  MetricSum accuracy{.name = "test_accuracy"};
  for (int64_t b = first_batch; b < end_batch; ++b) {
    const int64_t begin = b * batch_size;
    const int64_t size = std::min(batch_size, n - begin);
    data::Batch batch{.images = test_set.images.narrow(0, begin, size),
                      .labels = test_set.labels.narrow(0, begin, size),
                      .channels = test_set.channels,
                      .rows = test_set.rows,
                      .cols = test_set.cols};
    if (device.ok()) batch = BatchOnDevice(batch, *device);
    accuracy.sum += static_cast<double>(
        CountCorrect(forward(model, batch, nn::ForwardMode::kInference, unused),
                     batch.labels));
    accuracy.weight += static_cast<double>(size);
  }
  return accuracy;
}

// EvaluateAccuracy() is the fraction of `test_set` that AccuracySum()
// counts correct (0 for an empty set).
template <Module M, class ForwardFn>
double EvaluateAccuracy(const M& model, const data::ImageDataset& test_set,
                        const ForwardFn& forward, int64_t batch_size = 1000) {
  return AccuracySum(model, test_set, forward, batch_size).Mean();
}

// ClassificationStep() is the step function of a classifier: cross-entropy
// (with `label_smoothing`) of the forward function's logits on the batch,
// moved to the model's device.
template <Module M>
auto ClassificationStep(ClassifierForwardFn<M> forward,
                        double label_smoothing) {
  return [forward = std::move(forward), label_smoothing](
             const M& model, const data::Batch& host_batch,
             StepContext& context) {
    const data::Batch batch = BatchOnDevice(host_batch, context.device);
    return nn::CrossEntropy(forward(model, batch, context.mode, context.rng),
                            batch.labels, label_smoothing);
  };
}

template <Module M>
class ClassifierTrainer
    : public Trainer<M, data::DataLoader<data::ImageDataset>> {
  using Base = Trainer<M, data::DataLoader<data::ImageDataset>>;

 public:
  using ForwardFn = ClassifierForwardFn<M>;

  // A test set with no images skips the evaluation.
  ClassifierTrainer(M& model, Optimizer& optimizer,
                    data::DataLoader<data::ImageDataset>& loader,
                    data::ImageDataset test_set, ForwardFn forward,
                    TrainerOptions options)
      : Base(model, optimizer, loader,
             ClassificationStep<M>(forward, options.label_smoothing), options) {
    this->SetShardedEvaluation(
        AccuracyOn(std::move(test_set), forward, options.eval_batch_size));
  }

  // Accuracy() is the test set's accuracy now (0 without a test set).
  double Accuracy() const {
    const Metrics metrics = this->Evaluate();
    return metrics.empty() ? 0 : metrics.front().second;
  }

 private:
  // AccuracyOn(): the test-set accuracy, sharded over the ranks.
  static typename Base::ShardedEvalFn AccuracyOn(data::ImageDataset test_set,
                                                 ForwardFn forward,
                                                 int64_t batch_size) {
    if (!test_set.images.defined()) return nullptr;
    return [test_set = std::move(test_set), forward = std::move(forward),
            batch_size](const M& model, EvalShard shard) {
      return MetricSums{
          AccuracySum(model, test_set, forward, batch_size, shard)};
    };
  }
};

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_CLASSIFIER_H_
