#include "kindling/data/mnist.h"

#include <sys/stat.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kindling/data/idx_file.h"

namespace kindling::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // u8, rank 3
constexpr uint32_t kLabelsMagic = 0x00000801;  // u8, rank 1

bool FileExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// FindIdxFile() is directory/name.gz when it exists, else directory/name
// when that exists, else the .gz path (whose read then reports NotFound).
std::string FindIdxFile(const std::string& directory, std::string_view name) {
  const std::string plain = directory + "/" + std::string(name);
  const std::string gzip = absl::StrCat(plain, ".gz");
  if (!FileExists(gzip) && FileExists(plain)) return plain;
  return gzip;
}

[[nodiscard]] absl::StatusOr<IdxArray> ReadIdxOfKind(const std::string& path,
                                                     uint32_t magic,
                                                     std::string_view kind) {
  absl::StatusOr<IdxArray> array = ReadIdxFile(path);
  if (!array.ok()) return array.status();
  if (array->magic() != magic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: magic number 0x%08x (%s, rank %d) where MNIST %s need 0x%08x "
        "(u8, rank %d)",
        path, array->magic(), IdxElementTypeName(array->element_type),
        array->shape.rank(), kind, magic, magic & 0xFF));
  }
  return array;
}

// NormalizedPixels() maps u8 pixels to (x / 255 - mean) / std through a
// 256-entry table: one load per pixel, and every pixel value gets exactly
// the float the formula gives.
Tensor<2> NormalizedPixels(const IdxArray& images, double mean, double std) {
  std::array<float, 256> table;
  for (int value = 0; value < 256; ++value) {
    table[value] = static_cast<float>((value / 255.0 - mean) / std);
  }
  const int64_t count = images.shape[0];
  const int64_t pixels = images.shape[1] * images.shape[2];
  Tensor<2> result = Tensor<2>::Empty({count, pixels});
  float* out = result.base().data_as<float>();
  for (size_t i = 0; i < images.bytes.size(); ++i) {
    out[i] = table[images.bytes[i]];
  }
  return result;
}

Tensor<1, Int> LabelsAsI64(const IdxArray& labels) {
  Tensor<1, Int> result = Tensor<1, Int>::Empty({labels.shape[0]});
  int64_t* out = result.base().data_as<int64_t>();
  for (size_t i = 0; i < labels.bytes.size(); ++i) out[i] = labels.bytes[i];
  return result;
}

}  // namespace

absl::StatusOr<ImageDataset> LoadMnistFiles(const std::string& images_path,
                                            const std::string& labels_path,
                                            double mean, double std) {
  if (!(std > 0) || !std::isfinite(std) || !std::isfinite(mean)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MNIST normalization for %s: mean %g and std %g must be finite and "
        "std positive",
        images_path, mean, std));
  }
  absl::StatusOr<IdxArray> images =
      ReadIdxOfKind(images_path, kImagesMagic, "images");
  if (!images.ok()) return images.status();
  absl::StatusOr<IdxArray> labels =
      ReadIdxOfKind(labels_path, kLabelsMagic, "labels");
  if (!labels.ok()) return labels.status();
  if (images->shape[0] != labels->shape[0]) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MNIST files disagree: %s holds %d images but %s holds %d labels",
        images_path, images->shape[0], labels_path, labels->shape[0]));
  }
  ImageDataset dataset;
  dataset.images = NormalizedPixels(*images, mean, std);
  dataset.labels = LabelsAsI64(*labels);
  dataset.rows = images->shape[1];
  dataset.cols = images->shape[2];
  return dataset;
}

absl::StatusOr<ImageDataset> LoadMnistLike(MnistSplit split,
                                           const MnistOptions& options) {
  const std::string prefix = split == MnistSplit::kTrain ? "train" : "t10k";
  return LoadMnistFiles(FindIdxFile(options.directory,
                                    absl::StrCat(prefix, "-images-idx3-ubyte")),
                        FindIdxFile(options.directory,
                                    absl::StrCat(prefix, "-labels-idx1-ubyte")),
                        options.mean, options.std);
}

}  // namespace kindling::data
