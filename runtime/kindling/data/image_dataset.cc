#include "kindling/data/image_dataset.h"

#include <cstring>

#include "kindling/core/check.h"

namespace kindling::data {

ImageDataset ImageDataset::PreparedForLoading() const {
  KINDLING_CHECK(images.defined() && labels.defined(),
                 "ImageDataset: no images or no labels");
  KINDLING_CHECK(images.device().is_cpu() && labels.device().is_cpu(),
                 "ImageDataset: the data set must be on the CPU, not %s",
                 images.device().ToString());
  KINDLING_CHECK(images.dim(0) == labels.dim(0),
                 "ImageDataset: %d images but %d labels", images.dim(0),
                 labels.dim(0));
  KINDLING_CHECK(images.dim(1) == image_size(),
                 "ImageDataset: images of shape %s but channels %d x rows %d "
                 "x cols %d = %d values per image",
                 images.shape().ToString(), channels, rows, cols, image_size());
  ImageDataset packed = *this;
  packed.images = images.contiguous();
  packed.labels = labels.to(DType::kI64).contiguous();
  return packed;
}

Batch ImageDataset::Gather(std::span<const int64_t> indices) const {
  const int64_t count = static_cast<int64_t>(indices.size());
  const TensorBase& image_base = images.base();
  const size_t row_bytes = image_base.shape()[1] * image_base.element_size();
  Batch batch;
  batch.images = Tensor<2>::Empty({count, image_base.shape()[1]}, Device::Cpu(),
                                  image_base.dtype());
  batch.labels = Tensor<1, Int>::Empty({count});
  batch.channels = channels;
  batch.rows = rows;
  batch.cols = cols;
  const auto* image_rows = static_cast<const char*>(image_base.data());
  const int64_t* label_values = labels.base().data_as<const int64_t>();
  auto* image_out = static_cast<char*>(batch.images.base().data());
  int64_t* label_out = batch.labels.base().data_as<int64_t>();
  for (int64_t i = 0; i < count;) {
    // A run of consecutive samples (the whole batch when unshuffled) is one
    // copy.
    int64_t run = 1;
    while (i + run < count && indices[i + run] == indices[i] + run) ++run;
    const int64_t first = indices[i];
    KINDLING_CHECK(first >= 0 && first + run <= size(),
                   "ImageDataset::Gather: index %d outside 0..%d", first,
                   size() - 1);
    std::memcpy(image_out + i * row_bytes, image_rows + first * row_bytes,
                run * row_bytes);
    std::memcpy(label_out + i, label_values + first, run * sizeof(int64_t));
    i += run;
  }
  return batch;
}

}  // namespace kindling::data
