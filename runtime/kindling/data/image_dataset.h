// ImageDataset: an in-memory image classification data set, and Batch, the
// batch a DataLoader gathers from it. It is a Dataset (dataset.h).
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
#include <span>

#include "kindling/tensor/tensor.h"

namespace kindling::data {

// Batch is one step's worth of images. Its tensors are fresh copies, owned
// by the batch: keeping or modifying them never affects the data set.
struct Batch {
  // images is [B, channels * rows * cols], the data set's dtype.
  Tensor<2> images;
  // labels is [B], i64.
  Tensor<1, Int> labels;
  // epoch is the epoch this batch belongs to; index is its place in it
  // (0 for the first batch of an epoch). The DataLoader sets both.
  int64_t epoch = 0;
  int64_t index = 0;
  int64_t channels = 1;
  int64_t rows = 0;
  int64_t cols = 0;

  // size() is B, the number of samples.
  int64_t size() const { return labels.dim(0); }
  // images_nchw() views images as [B, channels, rows, cols] (no copy).
  Tensor<4> images_nchw() const {
    return images.reshape<4>({size(), channels, rows, cols});
  }
};

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

  // Gather() copies the images and labels at `indices` into a new batch
  // (runs of consecutive indices are copied as one block). REQUIRES: a data
  // set PreparedForLoading() returned, every index in 0..size()-1.
  Batch Gather(std::span<const int64_t> indices) const;

  // PreparedForLoading() checks the data set (on the CPU, images
  // [N, image_size()], labels [N]; aborts naming what is wrong) and returns
  // it with contiguous images and i64 labels, the layout Gather() reads.
  ImageDataset PreparedForLoading() const;
};

}  // namespace kindling::data

#endif  // KINDLING_DATA_IMAGE_DATASET_H_
