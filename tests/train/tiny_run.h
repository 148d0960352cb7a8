// A tiny, fast training setup shared by the train tests and the resume tool:
// examples::Mlp 16-8-8-LayerNorm-4 on 256 synthetic samples whose class is
// the argmax of their first four features, input dropout drawn from the
// trainer's Philox generator (so the dropout position matters on resume),
// Adam under a cosine schedule (so the schedule position matters too).
#ifndef KINDLING_TESTS_TRAIN_TINY_RUN_H_
#define KINDLING_TESTS_TRAIN_TINY_RUN_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "examples/mlp.kindling.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/image_dataset.h"
#include "kindling/module/initializer.h"
#include "kindling/module/walk.h"
#include "kindling/nn/forward_mode.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/classifier.h"

namespace kindling::train_test {

inline constexpr int64_t kSamples = 256;
inline constexpr int64_t kFeatures = 16;
inline constexpr int64_t kClasses = 4;
inline constexpr int64_t kBatch = 32;  // 8 steps per epoch

inline data::ImageDataset TinyDataset(uint64_t seed) {
  Generator generator(seed);
  data::ImageDataset dataset;
  dataset.images = Tensor<2>::RandomNormal({kSamples, kFeatures}, generator);
  dataset.labels =
      dataset.images.narrow(1, 0, kClasses).argmax(1).reshape<1>({kSamples});
  dataset.channels = 1;
  dataset.rows = 1;
  dataset.cols = kFeatures;
  return dataset;
}

inline examples::Mlp TinyModel(uint64_t init_seed) {
  SetInitSeed(init_seed);
  return examples::MlpConfig{.d_input = kFeatures,
                             .d_hidden = 8,
                             .hidden_layers = 1,
                             .num_classes = kClasses}
      .Init();
}

inline Optimizer TinyOptimizer() {
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 1e-2});
  KINDLING_CHECK(optimizer.ok(), "%s", optimizer.status().ToString());
  optimizer->set_schedule(LrSchedule::Cosine(/*total_steps=*/64, 1e-4));
  return *std::move(optimizer);
}

inline data::DataLoaderOptions TinyLoaderOptions() {
  return {.batch_size = kBatch, .seed = 7};
}

// TinyForward: input dropout (p = 0.2) in training, then the Mlp.
inline Tensor<2> TinyForward(const examples::Mlp& model,
                             const data::Batch& batch, nn::ForwardMode mode,
                             PhiloxGenerator& dropout) {
  Tensor<2> x = batch.images;
  if (mode == nn::ForwardMode::kTraining) {
    const uint64_t offset = ops::ReserveDropoutBlocks(dropout, x.base());
    x = x * Tensor<2>(ops::DropoutMask(x.shape(), x.dtype(), x.device(), 0.2,
                                       dropout.seed(), offset));
  }
  return model.Forward(x);
}

// WeightsText: every parameter value as hex floats, one line per tensor.
inline std::string WeightsText(const examples::Mlp& model) {
  std::string text;
  ForEachLeaf(model, [&](std::string_view path, const auto& leaf) {
    text += std::string(path) + ":";
    for (float value : leaf.val().template to_data<float>()) {
      text += absl::StrFormat(" %a", value);
    }
    text += "\n";
  });
  return text;
}

}  // namespace kindling::train_test

#endif  // KINDLING_TESTS_TRAIN_TINY_RUN_H_
