#include "kindling/data/data_loader.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "kindling/core/check.h"
#include "kindling/data/epoch_order.h"

namespace kindling::data {
namespace {

constexpr int kMaxPrefetchBatches = 8;

void CheckArguments(const ImageDataset& dataset,
                    const DataLoaderOptions& options) {
  KINDLING_CHECK(options.batch_size >= 1,
                 "DataLoader: batch_size %d must be at least 1",
                 options.batch_size);
  KINDLING_CHECK(options.prefetch_batches >= 0 &&
                     options.prefetch_batches <= kMaxPrefetchBatches,
                 "DataLoader: prefetch_batches %d is outside 0..%d",
                 options.prefetch_batches, kMaxPrefetchBatches);
  KINDLING_CHECK(dataset.images.defined() && dataset.labels.defined(),
                 "DataLoader: the data set has no images or no labels");
  KINDLING_CHECK(
      dataset.images.device().is_cpu() && dataset.labels.device().is_cpu(),
      "DataLoader: the data set must be on the CPU, not %s",
      dataset.images.device().ToString());
  KINDLING_CHECK(dataset.images.dim(0) == dataset.labels.dim(0),
                 "DataLoader: %d images but %d labels", dataset.images.dim(0),
                 dataset.labels.dim(0));
  KINDLING_CHECK(dataset.images.dim(1) == dataset.image_size(),
                 "DataLoader: images of shape %s but channels %d x rows %d x "
                 "cols %d = %d values per image",
                 dataset.images.shape().ToString(), dataset.channels,
                 dataset.rows, dataset.cols, dataset.image_size());
}

// Packed() is the data set with contiguous images and i64 labels, the layout
// Gather() copies rows from.
ImageDataset Packed(ImageDataset dataset) {
  dataset.images = dataset.images.contiguous();
  dataset.labels = dataset.labels.to(DType::kI64).contiguous();
  return dataset;
}

}  // namespace

// --- Producer ----------------------------------------------------------------

DataLoader::Producer::Producer(const ImageDataset& dataset,
                               const DataLoaderOptions& options,
                               const LoaderState& start)
    : dataset_(dataset),
      options_(options),
      cursor_(start),
      batch_index_((start.position + options.batch_size - 1) /
                   options.batch_size) {}

int64_t DataLoader::Producer::EpochEnd() const {
  const int64_t size = dataset_.size();
  return options_.drop_last ? size / options_.batch_size * options_.batch_size
                            : size;
}

std::optional<Batch> DataLoader::Producer::Produce() {
  if (cursor_.position >= EpochEnd()) {
    ++cursor_.epoch;
    cursor_.position = 0;
    batch_index_ = 0;
    return std::nullopt;
  }
  if (options_.shuffle && order_epoch_ != cursor_.epoch) {
    order_ = EpochOrder(cursor_.seed, cursor_.epoch, dataset_.size());
    order_epoch_ = cursor_.epoch;
  }
  const int64_t begin = cursor_.position;
  const int64_t end = std::min(begin + options_.batch_size, EpochEnd());
  Batch batch = Gather(begin, end);
  batch.epoch = cursor_.epoch;
  batch.index = batch_index_++;
  cursor_.position = end;
  return batch;
}

// Gather() copies samples begin..end-1 of the epoch's order, row by row.
Batch DataLoader::Producer::Gather(int64_t begin, int64_t end) const {
  const int64_t count = end - begin;
  const TensorBase& images = dataset_.images.base();
  const size_t row_bytes = images.shape()[1] * images.element_size();
  Batch batch;
  batch.images = Tensor<2>::Empty({count, images.shape()[1]}, Device::Cpu(),
                                  images.dtype());
  batch.labels = Tensor<1, Int>::Empty({count});
  batch.channels = dataset_.channels;
  batch.rows = dataset_.rows;
  batch.cols = dataset_.cols;
  const auto* image_rows = static_cast<const char*>(images.data());
  const int64_t* labels = dataset_.labels.base().data_as<const int64_t>();
  auto* image_out = static_cast<char*>(batch.images.base().data());
  int64_t* label_out = batch.labels.base().data_as<int64_t>();
  if (!options_.shuffle) {
    std::memcpy(image_out, image_rows + begin * row_bytes, count * row_bytes);
    std::memcpy(label_out, labels + begin, count * sizeof(int64_t));
    return batch;
  }
  for (int64_t i = 0; i < count; ++i) {
    const int64_t sample = order_[begin + i];
    std::memcpy(image_out + i * row_bytes, image_rows + sample * row_bytes,
                row_bytes);
    label_out[i] = labels[sample];
  }
  return batch;
}

// --- DataLoader --------------------------------------------------------------

DataLoader::DataLoader(ImageDataset dataset, const DataLoaderOptions& options)
    : dataset_((CheckArguments(dataset, options), Packed(std::move(dataset)))),
      options_(options),
      state_{.seed = options.seed,
             .epoch = 0,
             .position = 0,
             .dataset_size = dataset_.size()} {
  StartWorker();
}

DataLoader::~DataLoader() { StopWorker(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t size = dataset_.size();
  return options_.drop_last
             ? size / options_.batch_size
             : (size + options_.batch_size - 1) / options_.batch_size;
}

std::optional<Batch> DataLoader::Next() {
  std::optional<Batch> item;
  if (options_.prefetch_batches == 0) {
    item = producer_->Produce();
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty(); });
    item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
  }
  if (item.has_value()) {
    state_.position += item->size();
  } else {
    ++state_.epoch;
    state_.position = 0;
  }
  return item;
}

absl::Status DataLoader::Restore(const LoaderState& state) {
  if (state.dataset_size != dataset_.size() || state.epoch < 0 ||
      state.position < 0 || state.position > state.dataset_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DataLoader::Restore: state \"%s\" does not fit a data set of %d "
        "samples (it needs dataset_size %d, epoch >= 0 and 0 <= position <= "
        "dataset_size)",
        EncodeLoaderState(state), dataset_.size(), dataset_.size()));
  }
  StopWorker();
  state_ = state;
  StartWorker();
  return absl::OkStatus();
}

void DataLoader::StartWorker() {
  producer_ = std::make_unique<Producer>(dataset_, options_, state_);
  if (options_.prefetch_batches == 0) return;
  stopping_ = false;
  worker_ = std::thread([this] { WorkerLoop(); });
}

void DataLoader::StopWorker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
  queue_.clear();
}

void DataLoader::WorkerLoop() {
  const size_t capacity = options_.prefetch_batches;
  for (;;) {
    std::optional<Batch> item = producer_->Produce();
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || queue_.size() < capacity; });
    if (stopping_) return;
    queue_.push_back(std::move(item));
    lock.unlock();
    changed_.notify_all();
  }
}

}  // namespace kindling::data
