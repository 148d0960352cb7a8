#include "kindling/data/mnist.h"

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/idx_test_files.h"

namespace kindling::data {
namespace {

using ::kindling::data::testing::Gzip;
using ::kindling::data::testing::TestPath;
using ::kindling::data::testing::U8Idx;
using ::kindling::data::testing::WriteFile;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// MakeDirectory() is a fresh directory under the test's temporary directory.
std::string MakeDirectory(const std::string& name) {
  const std::string path = TestPath(name);
  ::mkdir(path.c_str(), 0755);
  return path;
}

// Labels() is a u8 rank-1 IDX file holding `labels`.
std::string Labels(const std::vector<uint8_t>& labels) {
  std::string bytes = {0, 0, 8, 1, 0, 0, 0, static_cast<char>(labels.size())};
  bytes.append(labels.begin(), labels.end());
  return bytes;
}

TEST(LoadMnistFiles, NormalizesPixelsAndWidensLabels) {
  const std::string images = WriteFile("n-images.idx", U8Idx({3, 2, 2}));
  const std::string labels = WriteFile("n-labels.idx", Labels({7, 0, 9}));
  absl::StatusOr<ImageDataset> dataset =
      LoadMnistFiles(images, labels, /*mean=*/0.5, /*std=*/0.25);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(3, dataset->size());
  EXPECT_EQ(2, dataset->rows);
  EXPECT_EQ(2, dataset->cols);
  EXPECT_EQ(1, dataset->channels);
  EXPECT_EQ(4, dataset->image_size());
  EXPECT_EQ(DType::kF32, dataset->images.dtype());
  EXPECT_EQ((Shape{3, 4}), dataset->images.shape());
  const std::vector<float> pixels = dataset->images.to_data<float>();
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(static_cast<float>((i / 255.0 - 0.5) / 0.25), pixels[i]) << i;
  }
  EXPECT_EQ(DType::kI64, dataset->labels.dtype());
  EXPECT_THAT(dataset->labels.to_data<int64_t>(), ElementsAre(7, 0, 9));
}

TEST(LoadMnistFiles, CountsThatDisagreeNameBothFiles) {
  const std::string images = WriteFile("d-images.idx", U8Idx({3, 2, 2}));
  const std::string labels = WriteFile("d-labels.idx", Labels({1, 2}));
  absl::StatusOr<ImageDataset> dataset = LoadMnistFiles(images, labels);
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, dataset.status().code());
  EXPECT_THAT(std::string(dataset.status().message()),
              AllOf(HasSubstr(images + " holds 3 images"),
                    HasSubstr(labels + " holds 2 labels")));
}

TEST(LoadMnistFiles, LabelFileAsImagesIsBadMagic) {
  const std::string labels = WriteFile("m-labels.idx", Labels({1, 2}));
  absl::StatusOr<ImageDataset> dataset = LoadMnistFiles(labels, labels);
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, dataset.status().code());
  EXPECT_THAT(std::string(dataset.status().message()),
              HasSubstr(labels + ": magic number 0x00000801 (u8, rank 1) "
                                 "where MNIST images need 0x00000803"));
}

TEST(LoadMnistFiles, RejectsNonPositiveStd) {
  absl::StatusOr<ImageDataset> dataset =
      LoadMnistFiles("images", "labels", /*mean=*/0, /*std=*/0);
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, dataset.status().code());
  EXPECT_THAT(std::string(dataset.status().message()), HasSubstr("std 0"));
}

TEST(LoadMnistLike, ReadsGzipAndPlainFilesFromADirectory) {
  const std::string directory = MakeDirectory("mixed");
  // Training images gzip-compressed, training labels plain.
  WriteFile("mixed/train-images-idx3-ubyte.gz", Gzip(U8Idx({2, 3, 3})));
  WriteFile("mixed/train-labels-idx1-ubyte", Labels({4, 5}));
  absl::StatusOr<ImageDataset> dataset = LoadMnistLike(
      MnistSplit::kTrain, {.directory = directory, .mean = 0, .std = 1});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((Shape{2, 9}), dataset->images.shape());
  EXPECT_FLOAT_EQ(17 / 255.0f, dataset->images.to_data<float>()[17]);
  EXPECT_THAT(dataset->labels.to_data<int64_t>(), ElementsAre(4, 5));
}

TEST(LoadMnistLike, MissingFilesAreNotFoundNamingThePath) {
  const std::string directory = MakeDirectory("empty-dataset");
  absl::StatusOr<ImageDataset> dataset =
      LoadMnistLike(MnistSplit::kTest, {.directory = directory});
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(absl::StatusCode::kNotFound, dataset.status().code());
  EXPECT_THAT(std::string(dataset.status().message()),
              HasSubstr(directory + "/t10k-images-idx3-ubyte.gz"));
}

}  // namespace
}  // namespace kindling::data
