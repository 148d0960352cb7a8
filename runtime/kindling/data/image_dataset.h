// ImageDataset: an in-memory image classification data set, the unit the
// DataLoader shuffles and batches.
//
// Images are stored flattened, one row per image, so that a batch is a
// gather of rows and feeds a Linear layer as is; a convolutional model views
// a batch as [B, channels, rows, cols] with a reshape (no copy):
//
//   kindling::data::ImageDataset dataset = ...;  // e.g. LoadMnistLike()
//   dataset.images;  // f32 [N, channels * rows * cols]
//   dataset.labels;  // i64 [N], the class of each image
//   dataset.images.reshape<4>({dataset.size(), dataset.channels,
//                              dataset.rows, dataset.cols});
//
// It is a plain struct of tensor handles: copying it copies no pixels.
#ifndef KINDLING_DATA_IMAGE_DATASET_H_
#define KINDLING_DATA_IMAGE_DATASET_H_

#include <cstdint>

#include "kindling/tensor/tensor.h"

namespace kindling::data {

struct ImageDataset {
  // images is [N, channels * rows * cols], one image per row (any float
  // dtype; the loaders here give f32).
  Tensor<2> images;
  // labels is [N], i64: the class of each image.
  Tensor<1, Int> labels;
  int64_t channels = 1;
  int64_t rows = 0;
  int64_t cols = 0;

  // size() is the number of images, N.
  int64_t size() const { return labels.defined() ? labels.dim(0) : 0; }
  // image_size() is the number of values per image, channels * rows * cols.
  int64_t image_size() const { return channels * rows * cols; }
};

}  // namespace kindling::data

#endif  // KINDLING_DATA_IMAGE_DATASET_H_
