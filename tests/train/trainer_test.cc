// The training loop and training checkpoints on the tiny setup (tiny_run.h):
// learning happens, checkpoints round-trip every piece of state, loading is
// all-or-nothing, Ctrl-C stops with a checkpoint, old checkpoints are pruned,
// and the committed checkpoint of this version keeps loading.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/io/module_file.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/classifier.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/train_state.h"
#include "tests/train/tiny_run.h"

namespace kindling::train {
namespace {

namespace fs = std::filesystem;
namespace test = train_test;

std::string TempDir(const std::string& name) {
  const std::string dir = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  fs::remove_all(dir);
  return dir;
}

TrainerOptions Quiet(const std::string& out_dir = "") {
  return TrainerOptions{.epochs = 1,
                        .out_dir = out_dir,
                        .dropout_seed = 11,
                        .eval_batch_size = 100,
                        .progress = {.quiet = true}};
}

TEST(TrainerTest, LearnsTheTinyTaskAndReportsEpochs) {
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  const data::ImageDataset dataset = test::TinyDataset(3);
  data::DataLoader loader(dataset, test::TinyLoaderOptions());
  TrainerOptions options = Quiet();
  options.epochs = 8;
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, dataset,
                                           test::TinyForward, options);
  const double before = trainer.Accuracy();
  absl::StatusOr<TrainReport> report = trainer.Run();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->epochs.size(), 8u);
  EXPECT_EQ(report->steps, 64);
  EXPECT_EQ(report->samples, 8 * test::kSamples);
  EXPECT_FALSE(report->stopped_early);
  EXPECT_LT(report->epochs.back().train_loss, report->epochs[0].train_loss);
  EXPECT_GT(report->epochs.back().metric("test_accuracy"), before + 0.2);
  EXPECT_GT(report->epochs.back().metric("test_accuracy"), 0.75);
  EXPECT_EQ(report->final_state.step, 64);
  EXPECT_EQ(report->final_state.epoch, 8);
}

// time_phases: every phase of every step is timed inside the run's
// training time, with and without accumulation; off, nothing is.
TEST(TrainerTest, TimesEachPhaseOnlyWhenAsked) {
  for (const int64_t accumulation_steps : {1, 2}) {
    for (const bool time_phases : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << "accumulation_steps " << accumulation_steps
                   << ", time_phases " << time_phases);
      examples::Mlp model = test::TinyModel(1);
      Optimizer optimizer = test::TinyOptimizer();
      const data::ImageDataset dataset = test::TinyDataset(3);
      data::DataLoader loader(dataset, test::TinyLoaderOptions());
      TrainerOptions options = Quiet();
      options.accumulation_steps = accumulation_steps;
      options.time_phases = time_phases;
      ClassifierTrainer<examples::Mlp> trainer(
          model, optimizer, loader, dataset, test::TinyForward, options);
      absl::StatusOr<TrainReport> report = trainer.Run();
      ASSERT_TRUE(report.ok()) << report.status();
      const StepPhases& phases = report->phases;
      if (!time_phases) {
        EXPECT_EQ(phases.total(), 0);
        continue;
      }
      EXPECT_GT(phases.data, 0);
      EXPECT_GT(phases.forward, 0);
      EXPECT_GT(phases.backward, 0);
      EXPECT_GT(phases.optimizer, 0);
      EXPECT_LE(phases.total(), report->train_seconds);
    }
  }
}

TEST(TrainStateTest, MetadataRoundTripsAndRejectsBadEntries) {
  const TrainState state{
      .epoch = 3,
      .step = 1234,
      .loader = {.seed = 42, .epoch = 3, .position = 64, .dataset_size = 256},
      .dropout = {.seed = 11, .offset = 987654321}};
  const std::string dir = TempDir("state");
  fs::create_directories(dir);
  examples::Mlp model = test::TinyModel(1);
  SaveOptions options;
  options.metadata = EncodeTrainState(state);
  ASSERT_TRUE(SaveModule(model, dir + "/m.safetensors", options).ok());
  absl::StatusOr<TrainState> back =
      checkpoint_internal::ReadTrainState(dir + "/m.safetensors");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, state);

  // A plain model file is not a training checkpoint.
  ASSERT_TRUE(SaveModule(model, dir + "/plain.safetensors").ok());
  absl::StatusOr<TrainState> plain =
      checkpoint_internal::ReadTrainState(dir + "/plain.safetensors");
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("train.format"), std::string::npos)
      << plain.status();

  // A bad number names its entry.
  options.metadata[2].second = "12x";  // train.step
  ASSERT_TRUE(SaveModule(model, dir + "/bad.safetensors", options).ok());
  absl::StatusOr<TrainState> bad =
      checkpoint_internal::ReadTrainState(dir + "/bad.safetensors");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("train.step"), std::string::npos)
      << bad.status();
}

TEST(CheckpointTest, RestoresModelOptimizerLoaderAndDropout) {
  const std::string dir = TempDir("roundtrip");
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  TrainerOptions options = Quiet(dir);
  options.epochs = 5;
  options.max_steps = 13;  // mid-epoch: loader position 5 * 32
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  absl::StatusOr<TrainReport> report = trainer.Run();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->stopped_early);
  const TrainState saved = trainer.state();
  EXPECT_EQ(saved.step, 13);
  EXPECT_EQ(saved.loader.epoch, 1);
  EXPECT_EQ(saved.loader.position, 5 * test::kBatch);
  EXPECT_GT(saved.dropout.offset, 0u);

  examples::Mlp fresh = test::TinyModel(2);
  Optimizer fresh_optimizer = test::TinyOptimizer();
  absl::StatusOr<TrainState> loaded =
      LoadLatestTrainingCheckpoint(dir, fresh, fresh_optimizer);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, saved);
  EXPECT_EQ(fresh_optimizer.step_count(), 13);
  EXPECT_EQ(test::WeightsText(fresh), test::WeightsText(model));
}

TEST(CheckpointTest, FailedLoadLeavesModelAndOptimizerUnchanged) {
  const std::string dir = TempDir("damaged");
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  TrainerOptions options = Quiet(dir);
  options.max_steps = 3;
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  ASSERT_TRUE(trainer.Run().ok());
  absl::StatusOr<std::string> latest = LatestCheckpointDir(dir);
  ASSERT_TRUE(latest.ok()) << latest.status();
  // Truncate the optimizer file: the model file alone is fine, so only an
  // all-or-nothing load keeps `other` as it was.
  fs::resize_file(*latest + "/optimizer.safetensors", 20);

  examples::Mlp other = test::TinyModel(5);
  const std::string before = test::WeightsText(other);
  Optimizer other_optimizer = test::TinyOptimizer();
  absl::StatusOr<TrainState> loaded =
      LoadLatestTrainingCheckpoint(dir, other, other_optimizer);
  EXPECT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("optimizer.safetensors"),
            std::string::npos)
      << loaded.status();
  EXPECT_EQ(test::WeightsText(other), before);
  EXPECT_EQ(other_optimizer.step_count(), 0);

  EXPECT_EQ(LatestCheckpointDir(TempDir("empty")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(CheckpointTest, KeepsTheTwoNewestCheckpoints) {
  const std::string dir = TempDir("prune");
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  TrainerOptions options = Quiet(dir);
  options.epochs = 4;  // a checkpoint after each epoch: steps 8, 16, 24, 32
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  ASSERT_TRUE(trainer.Run().ok());
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest", "step-00000024",
                                             "step-00000032"}));
  EXPECT_EQ(*LatestCheckpointDir(dir), dir + "/step-00000032");
}

TEST(TrainerTest, InterruptSavesAndResumeContinues) {
  const std::string dir = TempDir("interrupt");
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  TrainerOptions options = Quiet(dir);
  options.epochs = 2;
  options.on_step = [](int64_t step, double) {
    if (step == 6) RequestInterrupt();  // as Ctrl-C's handler does
  };
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  absl::StatusOr<TrainReport> report = trainer.Run();
  ClearInterrupt();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->stopped_early);
  EXPECT_EQ(report->steps, 6);
  EXPECT_EQ(*LatestCheckpointDir(dir), dir + "/step-00000006");

  examples::Mlp resumed = test::TinyModel(2);
  Optimizer resumed_optimizer = test::TinyOptimizer();
  data::DataLoader resumed_loader(test::TinyDataset(3),
                                  test::TinyLoaderOptions());
  options.on_step = nullptr;
  options.resume = true;
  ClassifierTrainer<examples::Mlp> second(resumed, resumed_optimizer,
                                          resumed_loader, {}, test::TinyForward,
                                          options);
  absl::StatusOr<TrainReport> rest = second.Run();
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(rest->resumed_from, dir + "/step-00000006");
  EXPECT_EQ(rest->steps, 10);  // 2 epochs of 8 steps, 6 done before
  EXPECT_EQ(rest->final_state.step, 16);
  EXPECT_FALSE(rest->stopped_early);
}

// The checkpoint under testdata/ was written by resume_tool of the first
// version of this format (`resume_tool --phase=first --n=5 --m=0
// --out_dir=tests/train/testdata/tiny_checkpoint`); it must keep loading.
TEST(CheckpointTest, CommittedCheckpointStillLoads) {
  const std::string dir = "tests/train/testdata/tiny_checkpoint";
  examples::Mlp model = test::TinyModel(99);
  Optimizer optimizer = test::TinyOptimizer();
  absl::StatusOr<TrainState> state =
      LoadLatestTrainingCheckpoint(dir, model, optimizer);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 5);
  EXPECT_EQ(state->epoch, 0);
  EXPECT_EQ(state->loader, (data::LoaderState{.seed = 7,
                                              .epoch = 0,
                                              .position = 5 * test::kBatch,
                                              .dataset_size = test::kSamples}));
  EXPECT_EQ(state->dropout.seed, 11u);
  EXPECT_EQ(optimizer.step_count(), 5);
  // The loaded model trains on (the optimizer's state matched the params).
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  ASSERT_TRUE(loader.Restore(state->loader).ok());
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, Quiet());
  absl::StatusOr<double> loss = trainer.Step(*loader.Next());
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_GT(*loss, 0);
  EXPECT_LT(*loss, 3);
}

// In one process: a model and optimizer loaded from a checkpoint step
// exactly like the ones that wrote it.
TEST(CheckpointTest, LoadedStateStepsLikeTheOriginal) {
  const std::string dir = TempDir("step_alike");
  examples::Mlp model = test::TinyModel(1);
  Optimizer optimizer = test::TinyOptimizer();
  data::DataLoader loader(test::TinyDataset(3), test::TinyLoaderOptions());
  TrainerOptions options = Quiet(dir);
  options.max_steps = 10;
  ClassifierTrainer<examples::Mlp> trainer(model, optimizer, loader, {},
                                           test::TinyForward, options);
  ASSERT_TRUE(trainer.Run().ok());

  examples::Mlp loaded = test::TinyModel(2);
  Optimizer loaded_optimizer = test::TinyOptimizer();
  ASSERT_TRUE(LoadLatestTrainingCheckpoint(dir, loaded, loaded_optimizer).ok());
  ASSERT_EQ(test::WeightsText(loaded), test::WeightsText(model));
  ForEachLeaf(model, [&](std::string_view path, const auto& leaf) {
    for (const char* name : {"exp_avg", "exp_avg_sq"}) {
      const TensorBase* original = optimizer.state_tensor(leaf.id(), name);
      const TensorBase* restored =
          loaded_optimizer.state_tensor(leaf.id(), name);
      ASSERT_NE(original, nullptr) << path;
      ASSERT_NE(restored, nullptr) << path << " " << name;
      EXPECT_EQ(
          Tensor<1>(original->Reshape({original->numel()})).to_data<float>(),
          Tensor<1>(restored->Reshape({restored->numel()})).to_data<float>())
          << path << " " << name;
    }
    EXPECT_EQ(optimizer.LearningRate(path),
              loaded_optimizer.LearningRate(path));
  });

  data::DataLoader again(test::TinyDataset(3), test::TinyLoaderOptions());
  const data::Batch batch = *again.Next();
  PhiloxGenerator dropout_a(5), dropout_b(5);
  for (auto [m, opt, gen] :
       {std::tuple(&model, &optimizer, &dropout_a),
        std::tuple(&loaded, &loaded_optimizer, &dropout_b)}) {
    const Tensor<0> loss = nn::CrossEntropy(
        test::TinyForward(*m, batch, nn::ForwardMode::kTraining, *gen),
        batch.labels);
    const Gradients grads = Backward(loss);
    // Every parameter has a gradient under its (restored) id.
    ForEachLeaf(*m, [&](std::string_view path, const auto& leaf) {
      EXPECT_TRUE(grads.Get(leaf.id()).has_value()) << path;
    });
    ASSERT_TRUE(opt->Step(*m, grads).ok());
  }
  EXPECT_EQ(test::WeightsText(loaded), test::WeightsText(model));
}

}  // namespace
}  // namespace kindling::train
