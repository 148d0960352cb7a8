// DataLoader: shuffled batches of an ImageDataset, prepared on a background
// thread while the current batch trains.
//
//   absl::StatusOr<kindling::data::ImageDataset> train =
//       kindling::data::LoadMnistLike(kindling::data::MnistSplit::kTrain);
//   if (!train.ok()) return train.status();
//   kindling::data::DataLoader loader(*train, {.batch_size = 64, .seed = 42});
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     while (std::optional<kindling::data::Batch> batch = loader.Next()) {
//       // batch->images: f32 [64, 784] (an epoch's last batch may be
//       // smaller: [32, 784]); batch->labels: i64 [64];
//       // batch->images_nchw(): f32 [64, 1, 28, 28], a view of images.
//     }
//     // Next() returned nullopt: epoch `epoch` is done; the next call starts
//     // the following one.
//   }
//
// Order. Each epoch visits every sample exactly once, in the order
// EpochOrder(seed, epoch, N) (or 0..N-1 with shuffle off), cut into batches of
// batch_size; the last, smaller batch is kept unless drop_last is set. The
// order depends only on seed and epoch, so it is the same on every run.
//
// Resuming. state() is where the consumer is: the seed, the epoch, and how
// many samples of it Next() has returned (batches prepared ahead but not yet
// returned do not count). Saving it with a checkpoint and passing it to
// Restore() later makes the next Next() return exactly the batch the saved
// loader would have returned.
//
// Threading. With prefetch_batches > 0, one background thread builds batches
// ahead of the consumer into a queue of at most that many; Next() takes the
// oldest, waiting only when the thread has fallen behind. The destructor
// stops and joins the thread whatever the consumer did (stopping mid-epoch is
// fine: the thread may be waiting for room in the queue, and is woken). With
// prefetch_batches = 0, Next() builds each batch itself and no thread exists.
// The public members are for one consumer thread; the loader reads the
// data set's tensors from its own thread, so they must not be written while
// a loader over them lives.
#ifndef KINDLING_DATA_DATA_LOADER_H_
#define KINDLING_DATA_DATA_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "kindling/data/image_dataset.h"
#include "kindling/data/loader_state.h"
#include "kindling/tensor/tensor.h"

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
};

// Batch is one step's worth of samples. Its tensors are fresh copies, owned
// by the batch: keeping or modifying them never affects the data set.
struct Batch {
  // images is [B, channels * rows * cols], the data set's dtype.
  Tensor<2> images;
  // labels is [B], i64.
  Tensor<1, Int> labels;
  // epoch is the epoch this batch belongs to; index is its place in it
  // (0 for the first batch of an epoch).
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

class DataLoader {
 public:
  // DataLoader() starts at epoch 0, position 0, with options.seed.
  // REQUIRES: dataset on the CPU, images [N, image_size()] and labels [N]
  // (checked); options as documented above (checked).
  DataLoader(ImageDataset dataset, const DataLoaderOptions& options);
  // ~DataLoader() stops and joins the background thread.
  ~DataLoader();

  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Next() is the next batch of the current epoch, or nullopt when the epoch
  // is over; the call after a nullopt starts the next epoch. Waits only when
  // the background thread has no batch ready.
  std::optional<Batch> Next();

  // state() is the position after the last Next() (see "Resuming" above).
  LoaderState state() const { return state_; }

  // Restore() continues from `state`: the next Next() returns what it
  // returned after state was taken (state.seed replaces options().seed).
  // Discards prepared batches. A state of a
  // data set of another size, or with a negative epoch or a position outside
  // 0..dataset_size, is InvalidArgument and leaves the loader untouched.
  [[nodiscard]] absl::Status Restore(const LoaderState& state);

  // batches_per_epoch() is how many batches Next() returns per epoch.
  int64_t batches_per_epoch() const;

  const ImageDataset& dataset() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  // --- Implementation details follow ------------------------------------

 private:
  // Producer builds the loader's stream of items (a batch, or nullopt for
  // the end of an epoch) from a cursor. One thread uses it at a time: the
  // background thread while it runs, Next() when there is none.
  class Producer {
   public:
    Producer(const ImageDataset& dataset, const DataLoaderOptions& options,
             const LoaderState& start);
    std::optional<Batch> Produce();

   private:
    Batch Gather(int64_t begin, int64_t end) const;
    int64_t EpochEnd() const;

    const ImageDataset& dataset_;
    const DataLoaderOptions& options_;
    LoaderState cursor_;
    int64_t batch_index_;
    // order_ is EpochOrder(seed, order_epoch_, N); computed when an epoch
    // starts (empty when shuffle is off).
    std::vector<int64_t> order_;
    int64_t order_epoch_ = -1;
  };

  void StartWorker();
  void StopWorker();
  void WorkerLoop();

  const ImageDataset dataset_;
  const DataLoaderOptions options_;
  // The consumer's position; only Next() and Restore() change it.
  LoaderState state_;
  std::unique_ptr<Producer> producer_;

  // The queue between the background thread and Next(). A std::mutex rather
  // than absl::Mutex because Debian's Abseil is not built with
  // ThreadSanitizer, which would then miss the happens-before edges.
  std::mutex mutex_;
  // Signalled when an item is pushed (Next() waits for one) and when one is
  // popped or stopping_ is set (the thread waits for room).
  std::condition_variable changed_;
  std::deque<std::optional<Batch>> queue_;  // guarded by mutex_
  bool stopping_ = false;                   // guarded by mutex_
  std::thread worker_;
};

}  // namespace kindling::data

#endif  // KINDLING_DATA_DATA_LOADER_H_
