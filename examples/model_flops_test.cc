// examples/model_flops.h against the example models' counts worked out by
// hand at batch 128.
#include "examples/model_flops.h"

#include "examples/cnn.kindling.h"
#include "examples/mlp.kindling.h"
#include "gtest/gtest.h"

namespace examples {
namespace {

TEST(ModelFlopsTest, QuickstartMlp) {
  // 784-256-256-256-10: 200704 + 2 x 65536 + 2560 = 334336 multiply-adds a
  // row forward; backward the weights' again plus the inputs' of all but
  // fc1 (133632).
  const kindling::nn::Flops flops = TrainingFlops(MlpConfig{}.Init(), 128);
  EXPECT_EQ(flops.forward, 2.0 * 128 * 334336);
  EXPECT_EQ(flops.backward, 2.0 * 128 * (334336 + 133632));
}

TEST(ModelFlopsTest, Cnn) {
  // conv1: 128 x 28 x 28 positions x 9 x 32; conv2: 128 x 14 x 14 x 288 x 64;
  // fc1: 128 x 3136 x 128; fc2: 128 x 128 x 10 (multiply-adds).
  const double conv1 = 128.0 * 784 * 9 * 32, conv2 = 128.0 * 196 * 288 * 64,
               fc1 = 128.0 * 3136 * 128, fc2 = 128.0 * 128 * 10;
  const kindling::nn::Flops flops = TrainingFlops(CnnConfig{}.Init(), 128);
  EXPECT_EQ(flops.forward, 2 * (conv1 + conv2 + fc1 + fc2));
  EXPECT_EQ(flops.backward, 2 * (conv1 + 2 * (conv2 + fc1 + fc2)));
  EXPECT_EQ(flops.total(), 3199401984.0);
}

}  // namespace
}  // namespace examples
