#include "kindling/data/data_loader.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/data/dataset.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling::data {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kImageSize = 6;  // 1 channel, 2 x 3

// NumberedDataset() has `size` samples; sample i has label i and pixels
// i * 100 + 0..5, so every batch says which samples it holds.
ImageDataset NumberedDataset(int64_t size) {
  std::vector<float> pixels(size * kImageSize);
  for (int64_t i = 0; i < size; ++i) {
    for (int64_t j = 0; j < kImageSize; ++j) {
      pixels[i * kImageSize + j] = static_cast<float>(i * 100 + j);
    }
  }
  std::vector<int64_t> labels(size);
  std::iota(labels.begin(), labels.end(), int64_t{0});
  ImageDataset dataset;
  dataset.images = Tensor<2>::FromData(pixels, {size, kImageSize});
  dataset.labels = Tensor<1, Int>::FromData(labels, {size});
  dataset.rows = 2;
  dataset.cols = 3;
  return dataset;
}

// SampleIds() reads the sample ids of a batch and checks that its images are
// those samples' images.
std::vector<int64_t> SampleIds(const Batch& batch) {
  const std::vector<int64_t> ids = batch.labels.to_data<int64_t>();
  const std::vector<float> pixels = batch.images.to_data<float>();
  EXPECT_EQ((Shape{static_cast<int64_t>(ids.size()), kImageSize}),
            batch.images.shape());
  for (size_t row = 0; row < ids.size(); ++row) {
    for (int64_t j = 0; j < kImageSize; ++j) {
      EXPECT_EQ(static_cast<float>(ids[row] * 100 + j),
                pixels[row * kImageSize + j])
          << "row " << row << " of batch " << batch.index;
    }
  }
  return ids;
}

// EpochIds() runs one epoch and returns its samples in order.
std::vector<int64_t> EpochIds(DataLoader<ImageDataset>& loader) {
  std::vector<int64_t> ids;
  while (std::optional<Batch> batch = loader.Next()) {
    const std::vector<int64_t> batch_ids = SampleIds(*batch);
    ids.insert(ids.end(), batch_ids.begin(), batch_ids.end());
  }
  return ids;
}

std::vector<int64_t> Iota(int64_t size) {
  std::vector<int64_t> values(size);
  std::iota(values.begin(), values.end(), int64_t{0});
  return values;
}

// The loader behaves the same with and without its background thread.
class DataLoaderTest : public ::testing::TestWithParam<int> {
 protected:
  DataLoaderOptions Options(int64_t batch_size, uint64_t seed = 7) const {
    return {
        .batch_size = batch_size, .seed = seed, .prefetch_batches = GetParam()};
  }
};

INSTANTIATE_TEST_SUITE_P(Prefetch, DataLoaderTest, ::testing::Values(0, 1, 2),
                         [](const auto& info) {
                           return "prefetch" + std::to_string(info.param);
                         });

TEST_P(DataLoaderTest, EveryEpochVisitsEachSampleOnce) {
  DataLoader loader(NumberedDataset(103), Options(10));
  EXPECT_EQ(11, loader.batches_per_epoch());
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> sizes;
    std::vector<int64_t> ids;
    int64_t index = 0;
    while (std::optional<Batch> batch = loader.Next()) {
      EXPECT_EQ(epoch, batch->epoch);
      EXPECT_EQ(index++, batch->index);
      sizes.push_back(batch->size());
      const std::vector<int64_t> batch_ids = SampleIds(*batch);
      ids.insert(ids.end(), batch_ids.begin(), batch_ids.end());
    }
    EXPECT_EQ(std::vector<int64_t>({10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 3}),
              sizes);
    EXPECT_NE(Iota(103), ids) << "epoch " << epoch << " is not shuffled";
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(Iota(103), ids) << "epoch " << epoch;
  }
}

TEST_P(DataLoaderTest, SameSeedSameOrder) {
  DataLoader first(NumberedDataset(50), Options(8, /*seed=*/3));
  DataLoader second(NumberedDataset(50), Options(8, /*seed=*/3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(EpochIds(first), EpochIds(second)) << "epoch " << epoch;
  }
}

TEST_P(DataLoaderTest, OtherSeedOtherOrder) {
  DataLoader first(NumberedDataset(50), Options(8, /*seed=*/3));
  DataLoader second(NumberedDataset(50), Options(8, /*seed=*/4));
  EXPECT_NE(EpochIds(first), EpochIds(second));
}

TEST_P(DataLoaderTest, EachEpochHasItsOwnOrder) {
  DataLoader loader(NumberedDataset(50), Options(8));
  const std::vector<int64_t> epoch0 = EpochIds(loader);
  const std::vector<int64_t> epoch1 = EpochIds(loader);
  const std::vector<int64_t> epoch2 = EpochIds(loader);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_NE(epoch1, epoch2);
  EXPECT_NE(epoch0, epoch2);
}

TEST_P(DataLoaderTest, WithoutShuffleVisitsInOrder) {
  DataLoaderOptions options = Options(4);
  options.shuffle = false;
  DataLoader loader(NumberedDataset(10), options);
  EXPECT_EQ(Iota(10), EpochIds(loader));
  EXPECT_EQ(Iota(10), EpochIds(loader));
}

TEST_P(DataLoaderTest, DropLastSkipsTheSmallBatch) {
  DataLoaderOptions options = Options(10);
  options.drop_last = true;
  DataLoader loader(NumberedDataset(103), options);
  EXPECT_EQ(10, loader.batches_per_epoch());
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t batches = 0;
    while (std::optional<Batch> batch = loader.Next()) {
      EXPECT_EQ(10, batch->size());
      ++batches;
    }
    EXPECT_EQ(10, batches);
  }
}

TEST_P(DataLoaderTest, StateCountsReturnedSamples) {
  DataLoader loader(NumberedDataset(25), Options(10, /*seed=*/9));
  EXPECT_EQ(
      (LoaderState{.seed = 9, .epoch = 0, .position = 0, .dataset_size = 25}),
      loader.state());
  ASSERT_TRUE(loader.Next().has_value());
  EXPECT_EQ(10, loader.state().position);
  ASSERT_TRUE(loader.Next().has_value());
  ASSERT_TRUE(loader.Next().has_value());
  EXPECT_EQ(25, loader.state().position);
  EXPECT_EQ(0, loader.state().epoch);
  EXPECT_FALSE(loader.Next().has_value());
  EXPECT_EQ(
      (LoaderState{.seed = 9, .epoch = 1, .position = 0, .dataset_size = 25}),
      loader.state());
}

// BatchRecord is what a consumer sees of a batch.
struct BatchRecord {
  int64_t epoch;
  int64_t index;
  std::vector<int64_t> ids;
  std::vector<float> pixels;
  friend bool operator==(const BatchRecord&, const BatchRecord&) = default;
};

// Drain() records the next `count` items (a nullopt epoch end as epoch -1).
std::vector<BatchRecord> Drain(DataLoader<ImageDataset>& loader, int count) {
  std::vector<BatchRecord> records;
  for (int i = 0; i < count; ++i) {
    std::optional<Batch> batch = loader.Next();
    if (!batch.has_value()) {
      records.push_back({-1, -1, {}, {}});
      continue;
    }
    records.push_back({batch->epoch, batch->index,
                       batch->labels.to_data<int64_t>(),
                       batch->images.to_data<float>()});
  }
  return records;
}

TEST_P(DataLoaderTest, ResumeMidEpochGivesTheSameRemainingBatches) {
  DataLoader original(NumberedDataset(47), Options(5, /*seed=*/11));
  EpochIds(original);  // epoch 0
  Drain(original, 4);  // 4 batches into epoch 1
  const LoaderState saved = original.state();
  EXPECT_EQ(
      (LoaderState{.seed = 11, .epoch = 1, .position = 20, .dataset_size = 47}),
      saved);
  // The rest of epoch 1 (6 batches and its end) and all of epoch 2.
  const std::vector<BatchRecord> expected = Drain(original, 7 + 11);

  // A fresh loader with another seed in its options: the state's seed wins.
  DataLoader resumed(NumberedDataset(47), Options(5, /*seed=*/99));
  absl::StatusOr<LoaderState> decoded =
      DecodeLoaderState(EncodeLoaderState(saved));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(resumed.Restore(*decoded).ok());
  EXPECT_EQ(saved, resumed.state());
  EXPECT_EQ(expected, Drain(resumed, 7 + 11));
  EXPECT_EQ(original.state(), resumed.state());
}

TEST_P(DataLoaderTest, RestoreDiscardsPreparedBatches) {
  DataLoader loader(NumberedDataset(30), Options(4));
  const LoaderState start = loader.state();
  const std::vector<BatchRecord> first = Drain(loader, 5);
  ASSERT_TRUE(loader.Restore(start).ok());
  EXPECT_EQ(first, Drain(loader, 5));
}

TEST_P(DataLoaderTest, RestoreRejectsAStateOfAnotherDataSet) {
  DataLoader loader(NumberedDataset(30), Options(4));
  Drain(loader, 2);
  const LoaderState before = loader.state();
  const absl::Status status = loader.Restore(
      {.seed = 1, .epoch = 0, .position = 8, .dataset_size = 31});
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("does not fit a data set of 30 samples"));
  EXPECT_EQ(before, loader.state());
  ASSERT_TRUE(loader.Next().has_value());  // carries on where it was
  EXPECT_EQ(12, loader.state().position);

  EXPECT_FALSE(
      loader
          .Restore({.seed = 1, .epoch = 0, .position = 31, .dataset_size = 30})
          .ok());
  EXPECT_FALSE(
      loader
          .Restore({.seed = 1, .epoch = -1, .position = 0, .dataset_size = 30})
          .ok());
}

TEST_P(DataLoaderTest, ImagesNchwViewsTheBatch) {
  DataLoader loader(NumberedDataset(9), Options(4));
  std::optional<Batch> batch = loader.Next();
  ASSERT_TRUE(batch.has_value());
  const Tensor<4> nchw = batch->images_nchw();
  EXPECT_EQ((Shape{4, 1, 2, 3}), nchw.shape());
  EXPECT_TRUE(nchw.shares_storage_with(batch->images));
}

TEST_P(DataLoaderTest, EmptyDataSetHasEmptyEpochs) {
  ImageDataset dataset;
  dataset.images = Tensor<2>::Zeros({0, kImageSize});
  dataset.labels = Tensor<1, Int>::Zeros({0});
  dataset.rows = 2;
  dataset.cols = 3;
  DataLoader loader(dataset, Options(4));
  EXPECT_FALSE(loader.Next().has_value());
  EXPECT_FALSE(loader.Next().has_value());
  EXPECT_EQ(2, loader.state().epoch);
}

// Destroying a loader whose thread is blocked on a full queue, mid-epoch,
// returns (no deadlock) and frees every prepared batch (no leak).
TEST_P(DataLoaderTest, DestroyedMidEpochStopsAndFreesEverything) {
  const ImageDataset dataset = NumberedDataset(1000);
  const int64_t live_before = GetMemoryStats(Device::Cpu()).live_bytes;
  for (int consumed = 0; consumed < 4; ++consumed) {
    DataLoader loader(dataset, Options(16));
    for (int i = 0; i < consumed; ++i) ASSERT_TRUE(loader.Next().has_value());
  }
  EXPECT_EQ(live_before, GetMemoryStats(Device::Cpu()).live_bytes);
}

TEST(DataLoaderDeathTest, RejectsBadOptionsAndShapes) {
  // Other tests leave OpenMP threads behind; re-exec rather than fork them.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(DataLoader(NumberedDataset(4), {.batch_size = 0}),
               "batch_size 0 must be at least 1");
  EXPECT_DEATH(DataLoader(NumberedDataset(4), {.prefetch_batches = 9}),
               "prefetch_batches 9 is outside 0..8");
  ImageDataset mismatched = NumberedDataset(4);
  mismatched.labels = Tensor<1, Int>::Zeros({3});
  EXPECT_DEATH(DataLoader(mismatched, {}), "4 images but 3 labels");
  ImageDataset wrong_size = NumberedDataset(4);
  wrong_size.rows = 3;
  EXPECT_DEATH(DataLoader(wrong_size, {}), "= 9 values per image");
}

// --- A data set of the user's own (dataset.h) -------------------------------

// Squares: sample i is the pair (i, i * i), gathered into plain vectors; its
// batch has no epoch or index members and no tensors at all.
struct Squares {
  struct Batch {
    std::vector<int64_t> ids;
    std::vector<int64_t> squares;
  };
  int64_t count = 0;
  int64_t size() const { return count; }
  Batch Gather(std::span<const int64_t> indices) const {
    Batch batch;
    for (int64_t i : indices) {
      batch.ids.push_back(i);
      batch.squares.push_back(i * i);
    }
    return batch;
  }
};
static_assert(Dataset<Squares>);
static_assert(Dataset<ImageDataset>);
static_assert(!Dataset<int>);

TEST_P(DataLoaderTest, AnyDatasetIsBatchedInTheSameOrderAsImages) {
  DataLoader squares(Squares{.count = 23}, Options(5, /*seed=*/3));
  DataLoader images(NumberedDataset(23), Options(5, /*seed=*/3));
  static_assert(std::is_same_v<decltype(squares)::BatchType, Squares::Batch>);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    int64_t batches = 0;
    for (Squares::Batch& batch : squares.Epoch()) {
      EXPECT_EQ(batches++, squares.batch_index());
      for (size_t i = 0; i < batch.ids.size(); ++i) {
        EXPECT_EQ(batch.ids[i] * batch.ids[i], batch.squares[i]);
        seen.push_back(batch.ids[i]);
      }
    }
    EXPECT_EQ(squares.batches_per_epoch(), batches);
    EXPECT_EQ(EpochIds(images), seen) << "epoch " << epoch;
    std::vector<int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(23);
    std::iota(all.begin(), all.end(), int64_t{0});
    EXPECT_EQ(all, sorted);
  }
  EXPECT_EQ(2, squares.state().epoch);
}

TEST_P(DataLoaderTest, AnyDatasetResumesMidEpoch) {
  DataLoader original(Squares{.count = 31}, Options(4, /*seed=*/5));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(original.Next().has_value());
  const LoaderState saved = original.state();
  DataLoader resumed(Squares{.count = 31}, Options(4, /*seed=*/6));
  ASSERT_TRUE(resumed.Restore(saved).ok());
  for (;;) {
    std::optional<Squares::Batch> want = original.Next();
    std::optional<Squares::Batch> got = resumed.Next();
    ASSERT_EQ(want.has_value(), got.has_value());
    if (!want.has_value()) break;
    EXPECT_EQ(want->ids, got->ids);
    EXPECT_EQ(original.batch_index(), resumed.batch_index());
  }
  EXPECT_FALSE(
      resumed
          .Restore({.seed = 5, .epoch = 0, .position = 0, .dataset_size = 30})
          .ok());
}

// --- Sharding over data-parallel ranks
// ----------------------------------------

// ShardEpoch() is each of `ranks` loaders' epoch 0 as lists of sample ids
// per batch (ranks x batches).
std::vector<std::vector<std::vector<int64_t>>> ShardEpoch(int64_t samples,
                                                          int64_t batch,
                                                          int ranks,
                                                          int prefetch) {
  std::vector<std::vector<std::vector<int64_t>>> result(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    DataLoader loader(Squares{.count = samples}, {.batch_size = batch,
                                                  .seed = 9,
                                                  .prefetch_batches = prefetch,
                                                  .shard_index = rank,
                                                  .shard_count = ranks});
    while (std::optional<Squares::Batch> next = loader.Next()) {
      result[rank].push_back(next->ids);
    }
  }
  return result;
}

TEST_P(DataLoaderTest, ShardsSplitEachGlobalBatchOfTheSingleOrder) {
  // 3 ranks x 4 = global batches of 12 from one process's order.
  const auto shards = ShardEpoch(50, 4, 3, GetParam());
  DataLoader single(Squares{.count = 50},
                    {.batch_size = 12, .seed = 9, .prefetch_batches = 0});
  std::vector<std::vector<int64_t>> global;
  while (std::optional<Squares::Batch> next = single.Next()) {
    global.push_back(next->ids);
  }
  ASSERT_EQ(global.size(), 5u);  // 4 x 12, then a tail of 2 < 3 ranks
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_EQ(shards[rank].size(), 4u) << "rank " << rank;
    for (size_t step = 0; step < 4; ++step) {
      const std::vector<int64_t> slice(global[step].begin() + 4 * rank,
                                       global[step].begin() + 4 * rank + 4);
      EXPECT_EQ(shards[rank][step], slice) << "rank " << rank;
    }
  }
}

TEST_P(DataLoaderTest, ATailOfAtLeastOneSamplePerRankIsSplitEvenly) {
  // 2 ranks x 4: 3 global batches of 8, then a tail of 5 split 2 + 3.
  const auto shards = ShardEpoch(29, 4, 2, GetParam());
  ASSERT_EQ(shards[0].size(), 4u);
  ASSERT_EQ(shards[1].size(), 4u);
  EXPECT_EQ(shards[0][3].size(), 2u);
  EXPECT_EQ(shards[1][3].size(), 3u);
  std::vector<int64_t> all;
  for (const auto& rank : shards) {
    for (const auto& batch : rank)
      all.insert(all.end(), batch.begin(), batch.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Iota(29));  // disjoint, and every sample once
}

TEST_P(DataLoaderTest, ShardStatesAgreeAndResumeOnAnotherWorldSize) {
  // Two ranks each take 2 steps of 3; the state (global position 12) is the
  // same on both, and one process with batch 6 resumes where they stopped.
  std::vector<LoaderState> states;
  std::vector<int64_t> seen;
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader loader(Squares{.count = 30}, {.batch_size = 3,
                                             .seed = 4,
                                             .prefetch_batches = GetParam(),
                                             .shard_index = rank,
                                             .shard_count = 2});
    EXPECT_EQ(loader.batches_per_epoch(), 5);
    for (int step = 0; step < 2; ++step) {
      const Squares::Batch batch = *loader.Next();
      seen.insert(seen.end(), batch.ids.begin(), batch.ids.end());
    }
    states.push_back(loader.state());
  }
  EXPECT_EQ(states[0], states[1]);
  EXPECT_EQ(states[0].position, 12);
  DataLoader single(Squares{.count = 30},
                    {.batch_size = 6, .seed = 4, .prefetch_batches = 0});
  ASSERT_TRUE(single.Restore(states[0]).ok());
  while (std::optional<Squares::Batch> next = single.Next()) {
    seen.insert(seen.end(), next->ids.begin(), next->ids.end());
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, Iota(30));
}

TEST(DataLoaderDeathTest, RejectsAShardOutsideTheWorld) {
  EXPECT_DEATH(
      DataLoader(Squares{.count = 4}, {.shard_index = 2, .shard_count = 2}),
      "shard_index 2 is outside 0..shard_count-1");
}

}  // namespace
}  // namespace kindling::data
