// DataLoader<D>: shuffled batches of any Dataset (dataset.h), prepared on a
// background thread while the current batch trains.
//
//   absl::StatusOr<kindling::data::ImageDataset> train =
//       kindling::data::LoadMnistLike(kindling::data::MnistSplit::kTrain);
//   if (!train.ok()) return train.status();
//   kindling::data::DataLoader loader(*train, {.batch_size = 64, .seed = 42});
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (kindling::data::Batch& batch : loader.Epoch()) {
//       // batch.images: f32 [64, 784] (an epoch's last batch may be
//       // smaller: [32, 784]); batch.labels: i64 [64];
//       // batch.images_nchw(): f32 [64, 1, 28, 28], a view of images.
//     }
//   }
//
// The loop's batches are what D::Gather() returns (here ImageDataset's
// Batch); the same loop runs over a data set of your own. Epoch() is sugar
// for Next(): Next() is the next batch of the current epoch, or nullopt when
// the epoch is over, and the call after a nullopt starts the next epoch.
//
// Order. Each epoch visits every sample exactly once, in the order
// EpochOrder(seed, epoch, N) (or 0..N-1 with shuffle off), cut into batches of
// batch_size; the last, smaller batch is kept unless drop_last is set. The
// order depends only on seed and epoch, so it is the same on every run.
//
// Sharding (data parallelism). With shard_count = N ranks and shard_index =
// this rank, every rank walks the same epoch order (same seed) cut into
// global batches of batch_size * N samples, and takes its own slice of each:
// rank r gets samples [r * batch_size, (r + 1) * batch_size) of a global
// batch. The ranks' slices are disjoint, cover the epoch, and every rank has
// the same number of batches, so a data-parallel step averages the same
// global batch a single process with batch_size * N would see. An epoch's
// last, smaller global batch is split in N near-equal slices (sizes differ
// by at most one); if it has fewer than N samples it is skipped. state()
// counts global positions, identical on every rank, so one checkpoint
// resumes any world size: the new ranks continue from the same place of the
// same order, cut into their own slices.
//
// Resuming. state() is where the consumer is: the seed, the epoch, and how
// many samples of it Next() has returned (batches prepared ahead but not yet
// returned do not count). Saving it with a checkpoint and passing it to
// Restore() later makes the next Next() return exactly the batch the saved
// loader would have returned.
//
// Threading. With prefetch_batches > 0, one background thread gathers
// batches ahead of the consumer into a queue of at most that many; Next()
// takes the oldest, waiting only when the thread has fallen behind. The
// destructor stops and joins the thread whatever the consumer did (stopping
// mid-epoch is fine: the thread may be waiting for room in the queue, and is
// woken). With prefetch_batches = 0, Next() gathers each batch itself and no
// thread exists. The public members are for one consumer thread; the loader
// reads its copy of the data set from its own thread, so tensors that copy
// shares must not be written while the loader lives.
#ifndef KINDLING_DATA_DATA_LOADER_H_
#define KINDLING_DATA_DATA_LOADER_H_

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kindling/data/dataset.h"
#include "kindling/data/epoch_order.h"
#include "kindling/data/image_dataset.h"
#include "kindling/data/loader_state.h"

namespace kindling::data {

struct DataLoaderOptions {
  // batch_size is the number of samples per batch. REQUIRES: >= 1.
  int64_t batch_size = 64;
  // shuffle visits each epoch in EpochOrder(seed, epoch, N); off, in 0..N-1.
  bool shuffle = true;
  uint64_t seed = 0;
  // drop_last skips an epoch's last batch when it would be smaller than
  // batch_size.
  bool drop_last = false;
  // prefetch_batches is how many batches the background thread may prepare
  // ahead (the queue bound); 0 builds batches in Next() with no thread.
  // REQUIRES: 0..8.
  int prefetch_batches = 2;
  // shard_count ranks share each epoch; this loader yields the slices of
  // rank shard_index (see "Sharding" above). REQUIRES: 0 <= shard_index <
  // shard_count.
  int shard_index = 0;
  int shard_count = 1;
};

// The parts of the loader that do not depend on the data set's type
// (data_loader.cc).
namespace loader_internal {
// CheckOptions() aborts naming a field outside its documented range.
void CheckOptions(const DataLoaderOptions& options);
// GlobalBatch() is batch_size * shard_count: the samples one step of all
// ranks together consumes.
int64_t GlobalBatch(const DataLoaderOptions& options);
// EpochEnd() is how many of `size` samples an epoch visits (all ranks).
int64_t EpochEnd(int64_t size, const DataLoaderOptions& options);
// BatchesPerEpoch() is how many batches an epoch of `size` samples has.
int64_t BatchesPerEpoch(int64_t size, const DataLoaderOptions& options);
// CheckRestore() is InvalidArgument unless `state` fits a data set of
// `size` samples.
absl::Status CheckRestore(const LoaderState& state, int64_t size);
}  // namespace loader_internal

template <Dataset D>
class DataLoader {
 public:
  using BatchType = BatchOf<D>;

  // DataLoader() keeps a copy of `dataset` (D::PreparedForLoading() when D
  // has one) and starts at epoch 0, position 0, with options.seed.
  // REQUIRES: options as documented above (checked).
  DataLoader(D dataset, const DataLoaderOptions& options)
      : dataset_(Prepared(std::move(dataset), options)),
        options_(options),
        state_{.seed = options.seed,
               .epoch = 0,
               .position = 0,
               .dataset_size = static_cast<int64_t>(dataset_.size())} {
    StartWorker();
  }
  // ~DataLoader() stops and joins the background thread.
  ~DataLoader() { StopWorker(); }

  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Next() is the next batch of the current epoch, or nullopt when the epoch
  // is over; the call after a nullopt starts the next epoch. Waits only when
  // the background thread has no batch ready.
  std::optional<BatchType> Next();

  // EpochRange: `for (auto& batch : loader.Epoch())` runs Next() until the
  // epoch ends. One pass; a range per epoch.
  class EpochRange;
  EpochRange Epoch() { return EpochRange(*this); }

  // batch_index() is the place in its epoch of the batch Next() returned
  // last (0 for an epoch's first batch).
  int64_t batch_index() const { return batch_index_; }

  // state() is the position after the last Next() (see "Resuming" above).
  LoaderState state() const { return state_; }

  // Restore() continues from `state`: the next Next() returns what it
  // returned after state was taken (state.seed replaces options().seed).
  // Discards prepared batches. A state of a data set of another size, or
  // with a negative epoch or a position outside 0..dataset_size, is
  // InvalidArgument and leaves the loader untouched.
  [[nodiscard]] absl::Status Restore(const LoaderState& state);

  // batches_per_epoch() is how many batches Next() returns per epoch.
  int64_t batches_per_epoch() const {
    return loader_internal::BatchesPerEpoch(dataset_.size(), options_);
  }

  const D& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // --- Implementation details follow ------------------------------------

 private:
  // Item: a gathered batch with the epoch's samples it consumes (all
  // ranks' slices) and its place in the epoch.
  struct Item {
    BatchType batch;
    int64_t samples;
    int64_t index;
  };

  // Producer builds the loader's stream of items (a batch, or nullopt for
  // the end of an epoch) from a cursor. One thread uses it at a time: the
  // background thread while it runs, Next() when there is none.
  class Producer {
   public:
    Producer(const D& dataset, const DataLoaderOptions& options,
             const LoaderState& start)
        : dataset_(dataset),
          options_(options),
          cursor_(start),
          batch_index_(
              (start.position + loader_internal::GlobalBatch(options) - 1) /
              loader_internal::GlobalBatch(options)) {}
    std::optional<Item> Produce();

   private:
    const D& dataset_;
    const DataLoaderOptions& options_;
    LoaderState cursor_;
    int64_t batch_index_;
    // order_ is the epoch's order: EpochOrder(seed, order_epoch_, N), or
    // 0..N-1 with shuffle off.
    std::vector<int64_t> order_;
    int64_t order_epoch_ = -1;
  };

  static D Prepared(D dataset, const DataLoaderOptions& options) {
    loader_internal::CheckOptions(options);
    if constexpr (requires { dataset.PreparedForLoading(); }) {
      return dataset.PreparedForLoading();
    } else {
      return dataset;
    }
  }
  void StartWorker();
  void StopWorker();
  void WorkerLoop();

  const D dataset_;
  const DataLoaderOptions options_;
  // The consumer's position; only Next() and Restore() change it.
  LoaderState state_;
  int64_t batch_index_ = -1;
  std::unique_ptr<Producer> producer_;

  // The queue between the background thread and Next(). A std::mutex rather
  // than absl::Mutex because Debian's Abseil is not built with
  // ThreadSanitizer, which would then miss the happens-before edges.
  std::mutex mutex_;
  // Signalled when an item is pushed (Next() waits for one) and when one is
  // popped or stopping_ is set (the thread waits for room).
  std::condition_variable changed_;
  std::deque<std::optional<Item>> queue_;  // guarded by mutex_
  bool stopping_ = false;                  // guarded by mutex_
  std::thread worker_;
};

template <Dataset D>
class DataLoader<D>::EpochRange {
 public:
  struct End {};
  class Iterator {
   public:
    explicit Iterator(DataLoader& loader)
        : loader_(&loader), batch_(loader.Next()) {}
    BatchType& operator*() { return *batch_; }
    BatchType* operator->() { return &*batch_; }
    Iterator& operator++() {
      batch_ = loader_->Next();
      return *this;
    }
    bool operator==(End) const { return !batch_.has_value(); }

   private:
    DataLoader* loader_;
    std::optional<BatchType> batch_;
  };

  explicit EpochRange(DataLoader& loader) : loader_(loader) {}
  Iterator begin() { return Iterator(loader_); }
  End end() { return {}; }

 private:
  DataLoader& loader_;
};

template <Dataset D>
std::optional<typename DataLoader<D>::Item> DataLoader<D>::Producer::Produce() {
  const int64_t size = dataset_.size();
  const int64_t epoch_end = loader_internal::EpochEnd(size, options_);
  if (cursor_.position >= epoch_end) {
    ++cursor_.epoch;
    cursor_.position = 0;
    batch_index_ = 0;
    return std::nullopt;
  }
  if (order_epoch_ != cursor_.epoch) {
    if (options_.shuffle) {
      order_ = EpochOrder(cursor_.seed, cursor_.epoch, size);
    } else if (static_cast<int64_t>(order_.size()) != size) {
      order_.resize(size);
      std::iota(order_.begin(), order_.end(), int64_t{0});
    }
    order_epoch_ = cursor_.epoch;
  }
  // This rank's slice of the global batch [global_begin, global_end).
  const int64_t global_begin = cursor_.position;
  const int64_t global_end = std::min(
      global_begin + loader_internal::GlobalBatch(options_), epoch_end);
  const int64_t length = global_end - global_begin;
  const int64_t begin =
      global_begin + length * options_.shard_index / options_.shard_count;
  const int64_t end =
      global_begin + length * (options_.shard_index + 1) / options_.shard_count;
  const std::span<const int64_t> indices(order_.data() + begin, end - begin);
  Item item{dataset_.Gather(indices), length, batch_index_++};
  if constexpr (requires(BatchType & b) {
                  b.epoch = int64_t{};
                  b.index = int64_t{};
                }) {
    item.batch.epoch = cursor_.epoch;
    item.batch.index = item.index;
  }
  cursor_.position = global_end;
  return item;
}

template <Dataset D>
std::optional<typename DataLoader<D>::BatchType> DataLoader<D>::Next() {
  std::optional<Item> item;
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
  if (!item.has_value()) {
    ++state_.epoch;
    state_.position = 0;
    return std::nullopt;
  }
  state_.position += item->samples;
  batch_index_ = item->index;
  return std::move(item->batch);
}

template <Dataset D>
absl::Status DataLoader<D>::Restore(const LoaderState& state) {
  if (absl::Status fits = loader_internal::CheckRestore(state, dataset_.size());
      !fits.ok()) {
    return fits;
  }
  StopWorker();
  state_ = state;
  batch_index_ = -1;
  StartWorker();
  return absl::OkStatus();
}

template <Dataset D>
void DataLoader<D>::StartWorker() {
  producer_ = std::make_unique<Producer>(dataset_, options_, state_);
  if (options_.prefetch_batches == 0) return;
  stopping_ = false;
  worker_ = std::thread([this] { WorkerLoop(); });
}

template <Dataset D>
void DataLoader<D>::StopWorker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
  queue_.clear();
}

template <Dataset D>
void DataLoader<D>::WorkerLoop() {
  const size_t capacity = options_.prefetch_batches;
  for (;;) {
    std::optional<Item> item = producer_->Produce();
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stopping_ || queue_.size() < capacity; });
    if (stopping_) return;
    queue_.push_back(std::move(item));
    lock.unlock();
    changed_.notify_all();
  }
}

}  // namespace kindling::data

#endif  // KINDLING_DATA_DATA_LOADER_H_
