// Reads the real Fashion-MNIST files from Debian's dataset-fashion-mnist
// package (installed by tools/bazel) and checks facts about them.
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/data/mnist.h"

namespace kindling::data {
namespace {

std::vector<int64_t> LabelHistogram(const ImageDataset& dataset) {
  std::vector<int64_t> histogram(10, 0);
  for (int64_t label : dataset.labels.to_data<int64_t>()) {
    EXPECT_TRUE(label >= 0 && label < 10) << label;
    if (label >= 0 && label < 10) ++histogram[label];
  }
  return histogram;
}

TEST(FashionMnist, TrainSplit) {
  absl::StatusOr<ImageDataset> train = LoadMnistLike(MnistSplit::kTrain);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(60000, train->size());
  EXPECT_EQ(28, train->rows);
  EXPECT_EQ(28, train->cols);
  EXPECT_EQ((Shape{60000, 784}), train->images.shape());
  EXPECT_EQ(std::vector<int64_t>(10, 6000), LabelHistogram(*train));
  // The first training image is an ankle boot (class 9); the next are
  // T-shirt, T-shirt, dress (0, 0, 3).
  EXPECT_THAT(train->labels.narrow(0, 0, 4).to_data<int64_t>(),
              ::testing::ElementsAre(9, 0, 0, 3));
  // Normalized with the data set's own mean and std, the training pixels
  // have mean ~0 and std ~1.
  const Tensor<2> images = train->images;
  const double mean = images.mean().to(DType::kF64).item<double>();
  const double variance =
      ((images - mean) * (images - mean)).mean().item<double>();
  EXPECT_NEAR(0.0, mean, 2e-3);
  EXPECT_NEAR(1.0, variance, 2e-3);
}

TEST(FashionMnist, TestSplit) {
  absl::StatusOr<ImageDataset> test = LoadMnistLike(MnistSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(10000, test->size());
  EXPECT_EQ((Shape{10000, 784}), test->images.shape());
  EXPECT_EQ(std::vector<int64_t>(10, 1000), LabelHistogram(*test));
  EXPECT_EQ(9, test->labels.narrow(0, 0, 1).item<int64_t>());
}

}  // namespace
}  // namespace kindling::data
