// char_lm: a small GPT-style byte-level language model trained on the quotes
// of Debian's `fortunes` package with the generic Trainer, then asked to
// write.
//
//   tools/bazel run //examples:char_lm                    # train (resumable)
//   tools/bazel run //examples:char_lm -- --sample --prompt="The "
//
// Training prints the validation loss in bits per character after each
// epoch and keeps checkpoints in --out_dir; --resume continues exactly.
// --sample loads the latest checkpoint and generates --length bytes after
// --prompt, sampling with --temperature among the --top_k likeliest bytes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "examples/char_lm.kindling.h"
#include "examples/char_lm_loss.h"
#include "examples/text_corpus.h"
#include "kindling/core/status_macros.h"
#include "kindling/data/data_loader.h"
#include "kindling/io/module_file.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/train/checkpoint.h"
#include "kindling/train/interrupt.h"
#include "kindling/train/threads.h"
#include "kindling/train/trainer.h"

ABSL_FLAG(int64_t, epochs, 2, "training epochs");
ABSL_FLAG(int64_t, batch_size, 32, "windows per step");
ABSL_FLAG(double, lr, 2e-3, "AdamW's peak learning rate (warmup, cosine)");
ABSL_FLAG(int64_t, max_steps, 0, "stop after this many steps (0: none)");
ABSL_FLAG(std::string, out_dir, "/tmp/kindling_char_lm",
          "checkpoint directory");
ABSL_FLAG(bool, resume, false, "continue from the latest checkpoint");
ABSL_FLAG(uint64_t, seed, 42, "seed of initialization, data order, dropout");
ABSL_FLAG(int, threads, 2, "CPU threads for the kernels");
ABSL_FLAG(int64_t, layers, 4, "transformer blocks");
ABSL_FLAG(int64_t, d_model, 128, "model width");
ABSL_FLAG(int64_t, heads, 4, "attention heads");
ABSL_FLAG(int64_t, context, 128, "bytes per training window");
ABSL_FLAG(std::string, corpus_dir, "/usr/share/games/fortunes",
          "the fortune files (Debian's `fortunes` package)");
ABSL_FLAG(int64_t, validation_windows, 256,
          "validation windows evaluated after each epoch (0: all)");
ABSL_FLAG(bool, sample, false, "generate text from the latest checkpoint");
ABSL_FLAG(std::string, prompt, "The ", "text the sample continues");
ABSL_FLAG(int64_t, length, 300, "bytes to generate");
ABSL_FLAG(double, temperature, 0.8, "sampling temperature (> 0)");
ABSL_FLAG(int64_t, top_k, 40, "sample among the k likeliest bytes (0: all)");

namespace {

namespace data = kindling::data;
namespace train = kindling::train;
using kindling::Tensor;

examples::CharLmConfig ModelConfig() {
  return {.layers = absl::GetFlag(FLAGS_layers),
          .d_model = absl::GetFlag(FLAGS_d_model),
          .heads = absl::GetFlag(FLAGS_heads),
          .context = absl::GetFlag(FLAGS_context)};
}

absl::Status Train() {
  KINDLING_ASSIGN_OR_RETURN(
      std::string text,
      examples::LoadFortunes(absl::GetFlag(FLAGS_corpus_dir)));
  std::string train_text, validation_text;
  examples::SplitText(text, 0.05, train_text, validation_text);
  const int64_t context = absl::GetFlag(FLAGS_context);
  const examples::TextWindows train_set{
      std::make_shared<const std::string>(std::move(train_text)), context};
  const examples::TextWindows validation{
      std::make_shared<const std::string>(std::move(validation_text)), context};
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  kindling::SetInitSeed(seed);
  examples::CharLm model = ModelConfig().Init();
  data::DataLoader loader(
      train_set, {.batch_size = absl::GetFlag(FLAGS_batch_size), .seed = seed});
  const int64_t epochs = absl::GetFlag(FLAGS_epochs);
  KINDLING_ASSIGN_OR_RETURN(
      kindling::Optimizer optimizer,
      kindling::Optimizer::AdamW({.lr = absl::GetFlag(FLAGS_lr)}));
  const int64_t total_steps = epochs * loader.batches_per_epoch();
  optimizer.set_schedule(kindling::LrSchedule::CosineWithWarmup(
      std::min<int64_t>(100, total_steps / 10), total_steps, /*min_lr=*/0));
  std::printf(
      "training a %lld-layer, d_model %lld byte-level model on %lld bytes of "
      "fortunes (%lld held out), %lld steps per epoch, checkpoints in %s\n",
      static_cast<long long>(absl::GetFlag(FLAGS_layers)),
      static_cast<long long>(absl::GetFlag(FLAGS_d_model)),
      static_cast<long long>(train_set.text->size()),
      static_cast<long long>(validation.text->size()),
      static_cast<long long>(loader.batches_per_epoch()),
      absl::GetFlag(FLAGS_out_dir).c_str());
  train::InstallInterruptHandler();
  const int64_t windows = absl::GetFlag(FLAGS_validation_windows);
  train::Trainer trainer(
      model, optimizer, loader,
      [](const examples::CharLm& m, const examples::TextWindows::Batch& batch,
         train::StepContext& step) {
        return examples::CharLmLoss(m, batch,
                                    {.mode = step.mode, .rng = &step.rng});
      },
      {.epochs = epochs,
       .max_steps = absl::GetFlag(FLAGS_max_steps),
       .out_dir = absl::GetFlag(FLAGS_out_dir),
       .resume = absl::GetFlag(FLAGS_resume),
       .dropout_seed = seed},
      [&validation, windows](const examples::CharLm& m) {
        return train::Metrics{
            {"validation_bits_per_byte",
             examples::ValidationBitsPerByte(m, validation, windows)}};
      });
  KINDLING_ASSIGN_OR_RETURN(train::TrainReport report, trainer.Run());
  const train::Metrics final_metrics = trainer.Evaluate();
  std::printf("char_lm: validation %.4f bits per byte after %lld steps\n",
              final_metrics.front().second,
              static_cast<long long>(report.final_state.step));
  return absl::OkStatus();
}

// NextByte() samples a byte from `logits` (the last position's, on the
// host) with the flags' temperature and top-k.
int NextByte(std::vector<float> logits, std::mt19937& rng) {
  const double temperature = absl::GetFlag(FLAGS_temperature);
  const int64_t top_k = absl::GetFlag(FLAGS_top_k);
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return logits[a] > logits[b]; });
  if (top_k > 0 && top_k < static_cast<int64_t>(order.size())) {
    order.resize(top_k);
  }
  std::vector<double> weights;
  for (int byte : order) {
    weights.push_back(
        std::exp((logits[byte] - logits[order[0]]) / temperature));
  }
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  return order[pick(rng)];
}

absl::Status Sample() {
  if (!(absl::GetFlag(FLAGS_temperature) > 0)) {
    return absl::InvalidArgumentError("--temperature must be positive");
  }
  examples::CharLm model = ModelConfig().Init();
  KINDLING_ASSIGN_OR_RETURN(std::string dir, train::LatestCheckpointDir(
                                                 absl::GetFlag(FLAGS_out_dir)));
  KINDLING_RETURN_IF_ERROR(
      kindling::LoadModule(model, dir + "/model.safetensors").status());
  std::string text = absl::GetFlag(FLAGS_prompt);
  if (text.empty()) text = "\n";
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  const int64_t context = absl::GetFlag(FLAGS_context);
  kindling::NoGradGuard no_grad;
  for (int64_t i = 0; i < absl::GetFlag(FLAGS_length); ++i) {
    const int64_t start =
        std::max<int64_t>(0, static_cast<int64_t>(text.size()) - context);
    std::vector<int64_t> ids;
    for (size_t j = start; j < text.size(); ++j) {
      ids.push_back(static_cast<uint8_t>(text[j]));
    }
    const int64_t length = static_cast<int64_t>(ids.size());
    const Tensor<3> logits =
        model.Forward(Tensor<2, kindling::Int>::FromData(ids, {1, length}), {});
    text.push_back(static_cast<char>(
        NextByte(logits.narrow(1, length - 1, 1).to_data<float>(), rng)));
  }
  std::printf("%s\n", text.c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  train::SetCpuThreads(absl::GetFlag(FLAGS_threads));
  const absl::Status status = absl::GetFlag(FLAGS_sample) ? Sample() : Train();
  if (!status.ok()) {
    std::fprintf(stderr, "char_lm: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
