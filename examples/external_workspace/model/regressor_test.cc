// The generated module code for example::Regressor, end to end: the
// parameter walk, a few SGD steps and a checkpoint round trip.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/io/module_file.h"
#include "kindling/module/module.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/tensor.h"
#include "model/regressor.kindling.h"

namespace {

using kindling::Tensor;

TEST(RegressorTest, VisitsEveryParameterByPath) {
  const example::Regressor model = example::RegressorConfig{}.Init();
  std::vector<std::string> paths;
  kindling::VisitParams(model, [&](std::string_view path, const auto&) {
    paths.emplace_back(path);
  });
  EXPECT_EQ((std::vector<std::string>{"hidden.weight", "hidden.bias",
                                      "output.weight", "output.bias"}),
            paths);
  EXPECT_EQ(8 * 32 + 32 + 32 * 1 + 1, kindling::NumParams(model));
}

TEST(RegressorTest, SgdStepsLowerTheLoss) {
  kindling::Generator generator(/*seed=*/1);
  const Tensor<2> inputs = Tensor<2>::RandomNormal({64, 8}, generator);
  const Tensor<2> targets = inputs.sum_dim(1);
  example::Regressor model = example::RegressorConfig{}.Init();
  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Sgd({.lr = 0.05});
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();

  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    const Tensor<0> loss =
        kindling::nn::MseLoss(model.Forward(inputs), targets);
    losses.push_back(loss.item<float>());
    ASSERT_TRUE(optimizer->Step(model, kindling::Backward(loss)).ok());
  }
  EXPECT_LT(losses.back(), losses.front());
}

TEST(RegressorTest, CheckpointRoundTripKeepsEveryValue) {
  const std::string path =
      (std::filesystem::path(testing::TempDir()) / "regressor.safetensors")
          .string();
  const example::Regressor model = example::RegressorConfig{}.Init();
  ASSERT_TRUE(kindling::SaveModule(model, path).ok());

  example::Regressor loaded = example::RegressorConfig{}.Init();
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(loaded, path);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(model.hidden.weight->to_data<float>(),
            loaded.hidden.weight->to_data<float>());
  EXPECT_EQ((*model.output.bias)->to_data<float>(),
            (*loaded.output.bias)->to_data<float>());
  EXPECT_EQ(model.hidden.weight.id(), loaded.hidden.weight.id());
}

}  // namespace
