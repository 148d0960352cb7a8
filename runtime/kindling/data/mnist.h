// LoadMnistLike: MNIST and the data sets that copy its files (Fashion-MNIST,
// KMNIST, ...) as an ImageDataset ready for training.
//
// Such a data set is a directory with four IDX files, gzip-compressed or not:
//
//   train-images-idx3-ubyte[.gz]  u8 [60000, 28, 28]  (magic 0x00000803)
//   train-labels-idx1-ubyte[.gz]  u8 [60000]          (magic 0x00000801)
//   t10k-images-idx3-ubyte[.gz]   u8 [10000, 28, 28]
//   t10k-labels-idx1-ubyte[.gz]   u8 [10000]
//
// The loader turns pixels into f32 normalized as (x / 255 - mean) / std and
// labels into i64. The defaults are Fashion-MNIST's, from Debian's
// dataset-fashion-mnist package (tools/bazel installs it):
//
//   absl::StatusOr<kindling::data::ImageDataset> train =
//       kindling::data::LoadMnistLike(kindling::data::MnistSplit::kTrain);
//   if (!train.ok()) return train.status();
//   train->images;  // f32 [60000, 784], mean ~0 and std ~1
//   train->labels;  // i64 [60000], classes 0..9
//
//   // Plain MNIST, unpacked somewhere else:
//   kindling::data::MnistOptions mnist{.directory = "/data/mnist",
//                                      .mean = kindling::data::kMnistMean,
//                                      .std = kindling::data::kMnistStd};
//
// Errors are absl::Status values naming the file: those of ReadIdxFile, a
// file of the wrong kind (magic number), and image and label files whose
// counts disagree (naming both).
#ifndef KINDLING_DATA_MNIST_H_
#define KINDLING_DATA_MNIST_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kindling/data/image_dataset.h"

namespace kindling::data {

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr std::string_view kFashionMnistDirectory =
    "/usr/share/datasets/fashion-mnist";
// Mean and standard deviation of Fashion-MNIST's training pixels, scaled to
// [0, 1] (measured: 0.28604, 0.35302).
inline constexpr double kFashionMnistMean = 0.2860;
inline constexpr double kFashionMnistStd = 0.3530;
// The same for MNIST (the figures torchvision's examples use).
inline constexpr double kMnistMean = 0.1307;
inline constexpr double kMnistStd = 0.3081;

// MnistSplit picks the training files (train-*) or the test files (t10k-*).
enum class MnistSplit { kTrain, kTest };

// MnistOptions says where the files are and how to normalize the pixels.
struct MnistOptions {
  std::string directory = std::string(kFashionMnistDirectory);
  double mean = kFashionMnistMean;
  // std must be positive and finite.
  double std = kFashionMnistStd;
};

// LoadMnistLike() loads one split from options.directory. Each file may be
// gzip-compressed (name + ".gz", preferred when both exist) or plain.
[[nodiscard]] absl::StatusOr<ImageDataset> LoadMnistLike(
    MnistSplit split, const MnistOptions& options = {});

// LoadMnistFiles() loads an image file (u8, rank 3) and its label file (u8,
// rank 1) given by path, normalizing with `mean` and `std`.
[[nodiscard]] absl::StatusOr<ImageDataset> LoadMnistFiles(
    const std::string& images_path, const std::string& labels_path,
    double mean = kFashionMnistMean, double std = kFashionMnistStd);

}  // namespace kindling::data

#endif  // KINDLING_DATA_MNIST_H_
