// custom_loop: a training loop written out by hand (no Trainer) on a
// regression problem: forward, MSE loss, Backward(), an optimizer step; then
// save, load into a fresh lazy model and check the two predict alike.
//
//   tools/bazel run //examples:custom_loop
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "examples/regressor.kindling.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/module_file.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"

namespace {

using kindling::Tensor;

// Data(): 256 points of y = tanh(2 x0) + x0 x1 / 2 on [-1, 1]^2.
void Data(Tensor<2>& x, Tensor<2>& y) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> inputs, targets;
  for (int i = 0; i < 256; ++i) {
    const float x0 = uniform(rng), x1 = uniform(rng);
    inputs.insert(inputs.end(), {x0, x1});
    targets.push_back(std::tanh(2 * x0) + x0 * x1 / 2);
  }
  x = Tensor<2>::FromData(inputs, {256, 2});
  y = Tensor<2>::FromData(targets, {256, 1});
}

absl::Status Run(const std::string& path) {
  Tensor<2> x, y;
  Data(x, y);
  kindling::SetInitSeed(42);
  examples::Regressor model = examples::RegressorConfig{}.Init();
  KINDLING_ASSIGN_OR_RETURN(kindling::Optimizer optimizer,
                            kindling::Optimizer::AdamW({.lr = 1e-2}));
  for (int step = 0; step <= 500; ++step) {
    const Tensor<0> loss = kindling::nn::MseLoss(model.Forward(x), y);
    if (step % 100 == 0) {
      std::printf("step %3d  loss %.5f\n", step, loss.item<float>());
    }
    const kindling::Gradients grads = kindling::Backward(loss);
    KINDLING_RETURN_IF_ERROR(optimizer.Step(model, grads));
  }

  KINDLING_RETURN_IF_ERROR(kindling::SaveModule(model, path));
  examples::Regressor loaded = examples::RegressorConfig{}.Init();  // lazy
  KINDLING_RETURN_IF_ERROR(kindling::LoadModule(loaded, path).status());
  const bool same =
      loaded.Forward(x).to_data<float>() == model.Forward(x).to_data<float>();
  std::printf("reloaded from %s: predictions %s\n", path.c_str(),
              same ? "identical" : "DIFFER");
  return same ? absl::OkStatus() : absl::InternalError("reload differs");
}

}  // namespace

int main(int argc, char** argv) {
  const absl::Status status =
      Run(argc > 1 ? argv[1] : "/tmp/custom_loop.safetensors");
  if (!status.ok())
    std::fprintf(stderr, "custom_loop: %s\n", status.ToString().c_str());
  return status.ok() ? 0 : 1;
}
