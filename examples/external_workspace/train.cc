// train: fits the example's Regressor to synthetic data with Adam, printing
// the loss as it goes down, then saves a checkpoint, loads it into a fresh
// (lazy) model and checks that both predict the same.
//
//   bazel run //:train                                   # checkpoint in /tmp
//   bazel run //:train -- /path/to/regressor.safetensors
//   bazel run --config=cuda //:train                     # links the CUDA
//   backend
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/autodiff/backward.h"
#include "kindling/io/module_file.h"
#include "kindling/module/module.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"
#include "model/regressor.kindling.h"

namespace {

using kindling::Tensor;

constexpr int kSteps = 60;

// Data: targets from a fixed linear map plus a bias, which the model learns.
struct Data {
  Tensor<2> inputs;   // [256, 8]
  Tensor<2> targets;  // [256, 1]
};

Data MakeData(kindling::Generator& generator) {
  const Tensor<2> inputs = Tensor<2>::RandomNormal({256, 8}, generator);
  const Tensor<2> true_weight = Tensor<2>::FromData<float>(
      {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.5f, 1.0f, -2.0f}, {8, 1});
  return {inputs, matmul(inputs, true_weight) + 0.5};
}

absl::Status Run(const std::string& checkpoint) {
  kindling::Generator generator(/*seed=*/0);
  const Data data = MakeData(generator);
  example::Regressor model = example::RegressorConfig{}.Init();
  std::printf("Regressor: %lld parameters\n",
              static_cast<long long>(kindling::NumParams(model)));

  absl::StatusOr<kindling::Optimizer> optimizer =
      kindling::Optimizer::Adam({.lr = 1e-2});
  if (!optimizer.ok()) return optimizer.status();
  float first_loss = 0;
  float last_loss = 0;
  for (int step = 0; step < kSteps; ++step) {
    const Tensor<0> loss =
        kindling::nn::MseLoss(model.Forward(data.inputs), data.targets);
    last_loss = loss.item<float>();
    if (step == 0) first_loss = last_loss;
    if (step % 10 == 0 || step == kSteps - 1) {
      std::printf("step %2d  loss %.4f\n", step, last_loss);
    }
    const kindling::Gradients grads = kindling::Backward(loss);
    if (absl::Status stepped = optimizer->Step(model, grads); !stepped.ok()) {
      return stepped;
    }
  }
  if (!(last_loss < 0.5f * first_loss)) {
    return absl::InternalError("the loss did not go down");
  }

  if (absl::Status saved = kindling::SaveModule(model, checkpoint);
      !saved.ok()) {
    return saved;
  }
  example::Regressor loaded = example::RegressorConfig{}.Init();
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(loaded, checkpoint);
  if (!report.ok()) return report.status();
  kindling::NoGradGuard no_grad;
  if (model.Forward(data.inputs).to_data<float>() !=
      loaded.Forward(data.inputs).to_data<float>()) {
    return absl::InternalError("the loaded model predicts differently");
  }
  std::printf("saved %s and loaded it back: same predictions\n",
              checkpoint.c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string checkpoint =
      argc > 1 ? argv[1]
               : (std::filesystem::temp_directory_path() /
                  "kindling_example_regressor.safetensors")
                     .string();
  if (absl::Status status = Run(checkpoint); !status.ok()) {
    std::fprintf(stderr, "train: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
