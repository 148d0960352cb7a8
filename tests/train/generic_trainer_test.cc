// Trainer<M, Loader> on a model and data set that are not image
// classification: a regression model (examples/regressor.h) on a data set of
// the test's own, with its own step and evaluation functions.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "examples/regressor.kindling.h"
#include "gtest/gtest.h"
#include "kindling/data/data_loader.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/trainer.h"

namespace kindling::train {
namespace {

// Points: y = tanh(2 x0) + x0 x1 / 2 on [-1, 1]^2, as a Dataset.
struct Points {
  struct Batch {
    Tensor<2> x;
    Tensor<2> y;
    int64_t size() const { return x.dim(0); }
  };
  Tensor<2> x;
  Tensor<2> y;

  int64_t size() const { return x.dim(0); }
  Batch Gather(std::span<const int64_t> indices) const {
    const auto index = Tensor<1, Int>::FromData(
        std::vector<int64_t>(indices.begin(), indices.end()),
        {static_cast<int64_t>(indices.size())});
    return {index_select(x, 0, index), index_select(y, 0, index)};
  }
};

Points MakePoints(int count) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> inputs, targets;
  for (int i = 0; i < count; ++i) {
    const float x0 = uniform(rng), x1 = uniform(rng);
    inputs.insert(inputs.end(), {x0, x1});
    targets.push_back(std::tanh(2 * x0) + x0 * x1 / 2);
  }
  return {Tensor<2>::FromData(inputs, {count, 2}),
          Tensor<2>::FromData(targets, {count, 1})};
}

using Loader = data::DataLoader<Points>;
using RegressionTrainer = Trainer<examples::Regressor, Loader>;

// Mse(): the step function; it also records the steps its context names.
RegressionTrainer::StepFn Mse(std::vector<int64_t>* steps = nullptr) {
  return [steps](const examples::Regressor& model, const Points::Batch& batch,
                 StepContext& context) {
    if (steps != nullptr) steps->push_back(context.step);
    EXPECT_EQ(nn::ForwardMode::kTraining, context.mode);
    return nn::MseLoss(model.Forward(batch.x.to_device(context.device)),
                       batch.y.to_device(context.device));
  };
}

// MseOn(): the evaluation function, the mean squared error over `points`.
RegressionTrainer::EvalFn MseOn(Points points) {
  return [points](const examples::Regressor& model) {
    EXPECT_FALSE(IsGradEnabled());
    return Metrics{
        {"mse", nn::MseLoss(model.Forward(points.x), points.y).item<float>()}};
  };
}

TrainerOptions Quiet(const std::string& out_dir, int64_t epochs) {
  return {.epochs = epochs,
          .out_dir = out_dir,
          .resume = true,
          .progress = {.quiet = true}};
}

TEST(GenericTrainerTest, TrainsARegressionModelWithItsOwnMetrics) {
  SetInitSeed(3);
  examples::Regressor model = examples::RegressorConfig{}.Init();
  absl::StatusOr<Optimizer> optimizer = Optimizer::AdamW({.lr = 1e-2});
  ASSERT_TRUE(optimizer.ok());
  Loader loader(MakePoints(256), {.batch_size = 32, .seed = 1});
  std::vector<int64_t> steps;
  // The class template arguments are deduced from model and loader.
  Trainer trainer(model, *optimizer, loader, Mse(&steps),
                  Quiet("", /*epochs=*/15), MseOn(MakePoints(256)));
  static_assert(std::is_same_v<decltype(trainer), RegressionTrainer>);
  const double before = trainer.Evaluate().front().second;
  absl::StatusOr<TrainReport> report = trainer.Run();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(15u, report->epochs.size());
  EXPECT_EQ(15 * 8, report->steps);
  EXPECT_EQ(15 * 256, report->samples);
  // The context's step is the optimizer step the batch makes.
  ASSERT_EQ(120u, steps.size());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(i + 1, steps[i]);
  const double after = report->epochs.back().metric("mse");
  EXPECT_LT(after, before / 5) << "before " << before;
  EXPECT_LT(report->epochs.back().train_loss, report->epochs[0].train_loss);
  EXPECT_TRUE(std::isnan(report->epochs.back().metric("accuracy")));
}

// An interrupted run resumed by a fresh trainer ends with the same weights,
// bit for bit, as a run that never stopped.
TEST(GenericTrainerTest, ResumeContinuesExactly) {
  const std::string root = ::testing::TempDir() + "/generic_resume";
  std::filesystem::remove_all(root);
  const auto run = [&](const std::string& dir, int64_t max_steps) {
    SetInitSeed(5);
    examples::Regressor model = examples::RegressorConfig{}.Init();
    absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 1e-2});
    EXPECT_TRUE(optimizer.ok());
    Loader loader(MakePoints(100), {.batch_size = 16, .seed = 2});
    TrainerOptions options = Quiet(dir, /*epochs=*/3);
    options.max_steps = max_steps;
    RegressionTrainer trainer(model, *optimizer, loader, Mse(), options);
    absl::StatusOr<TrainReport> report = trainer.Run();
    EXPECT_TRUE(report.ok()) << report.status();
    return model.output.weight->to_data<float>();
  };
  const std::vector<float> straight = run(root + "/straight", 0);
  run(root + "/stopped", 10);  // mid-epoch 1 (7 steps per epoch)
  const std::vector<float> resumed = run(root + "/stopped", 0);
  EXPECT_EQ(straight, resumed);
}

}  // namespace
}  // namespace kindling::train
