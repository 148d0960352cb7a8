// Trains examples::Cnn (cnn.h: two conv + max-pool layers, then two Linear)
// on Fashion-MNIST: test accuracy after each epoch, a training checkpoint
// each epoch (Ctrl-C saves too, --resume continues), a lazy reload of the
// checkpoint evaluated again, and one summary line.
//
//   tools/bazel run //examples:cnn
//   tools/bazel run //examples:cnn -- --epochs=5 --threads=4
//   tools/bazel run --config=cuda //examples:cnn -- --device=cuda
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "examples/cnn.kindling.h"
#include "examples/data_parallel.h"
#include "examples/train_classifier.h"
#include "examples/train_flags.h"
#include "kindling/data/data_loader.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/threads.h"

namespace {

kindling::Tensor<2> CnnLogits(const examples::Cnn& model,
                              const kindling::data::Batch& batch,
                              kindling::nn::ForwardMode,
                              kindling::PhiloxGenerator&) {
  return model.Forward(batch.images_nchw());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // --nproc=N: this process only launches N ranks of itself.
  if (std::optional<int> code = examples::LaunchRanksIfAsked(argc, argv)) {
    return *code;
  }
  absl::StatusOr<examples::Job> job = examples::JoinJob();
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 2;
  }
  kindling::train::SetCpuThreads(examples::ThreadsPerRank(*job));
  return examples::TrainClassifier<examples::Cnn>(
      "cnn", *job,
      [](const kindling::Device& device) {
        return examples::CnnConfig{}.Init(device);
      },
      CnnLogits);
}
