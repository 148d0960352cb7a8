// Sharded evaluation: EvalShard's ranges, MeansOf, AddAcrossRanks over
// three Gloo ranks in this process (threads meeting through a file store),
// and ClassifierTrainer's test-set accuracy split into shards.
#include "kindling/train/metrics.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/gloo_communicator.h"
#include "kindling/train/classifier.h"
#include "tests/train/tiny_run.h"

namespace kindling::train {
namespace {

namespace test = train_test;

TEST(EvalShardTest, RangesCoverEachUnitOnceInOrder) {
  for (int64_t units = 0; units <= 23; ++units) {
    for (int64_t count = 1; count <= 5; ++count) {
      int64_t next = 0;
      for (int64_t index = 0; index < count; ++index) {
        const auto [begin, end] = EvalShard{index, count}.Range(units);
        EXPECT_EQ(begin, next) << units << " units, shard " << index;
        EXPECT_LE(end - begin, units / count + 1);
        EXPECT_GE(end - begin, units / count);
        next = end;
      }
      EXPECT_EQ(next, units) << units << " units in " << count << " shards";
    }
  }
}

TEST(MetricsTest, MeansOfDividesAndAnEmptyWeightIsZero) {
  const Metrics means =
      MeansOf({{"accuracy", 3, 4}, {"nothing", 5, 0}, {"loss", -1, 8}});
  ASSERT_EQ(means.size(), 3u);
  EXPECT_EQ(means[0], (std::pair<std::string, double>{"accuracy", 0.75}));
  EXPECT_EQ(means[1], (std::pair<std::string, double>{"nothing", 0}));
  EXPECT_EQ(means[2], (std::pair<std::string, double>{"loss", -0.125}));
}

// OnRanks() runs body(comm) on `world` Gloo ranks, one thread each, and
// returns what each returned.
// NewStoreDirectory() is an empty directory of its own for a job's store.
std::string NewStoreDirectory() {
  static int jobs = 0;
  const std::string path =
      std::string(getenv("TEST_TMPDIR")) + "/store" + std::to_string(jobs++);
  std::filesystem::create_directories(path);
  return path;
}

template <class Body>
std::vector<absl::StatusOr<Metrics>> OnRanks(int world, const Body& body) {
  const std::string store = NewStoreDirectory();
  std::vector<absl::StatusOr<Metrics>> results(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<distributed::Communicator>> comm =
          distributed::ConnectGloo({.rank = rank,
                                    .world_size = world,
                                    .timeout = absl::Seconds(30),
                                    .listen_host = "127.0.0.1",
                                    .file_store_path = store});
      if (!comm.ok()) {
        results[rank] = comm.status();
        return;
      }
      results[rank] = body(**comm);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return results;
}

TEST(MetricsTest, AddAcrossRanksGivesEveryRankTheWholeFigures) {
  const auto results = OnRanks(3, [](distributed::Communicator& comm) {
    const double r = comm.rank();
    return AddAcrossRanks({{"accuracy", r + 1, 10}, {"loss", 2 * r, 5}}, comm);
  });
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(results[rank].ok()) << rank << ": " << results[rank].status();
    const Metrics& metrics = *results[rank];
    ASSERT_EQ(metrics.size(), 2u);
    EXPECT_EQ(metrics[0].first, "accuracy");
    EXPECT_DOUBLE_EQ(metrics[0].second, 6.0 / 30);
    EXPECT_EQ(metrics[1].first, "loss");
    EXPECT_DOUBLE_EQ(metrics[1].second, 6.0 / 15);
  }
}

TEST(MetricsTest, AddAcrossRanksRefusesFiguresThatDifferOnARank) {
  // Rank 1 names a figure differently, then (second job) has one more.
  for (const MetricSums& odd :
       {MetricSums{{"accuracy", 1, 1}, {"los", 1, 1}},
        MetricSums{{"accuracy", 1, 1}, {"loss", 1, 1}, {"extra", 1, 1}}}) {
    const auto results = OnRanks(2, [&](distributed::Communicator& comm) {
      const MetricSums usual = {{"accuracy", 1, 1}, {"loss", 1, 1}};
      return AddAcrossRanks(comm.rank() == 1 ? odd : usual, comm);
    });
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(results[rank].status().code(),
                absl::StatusCode::kFailedPrecondition)
          << rank << ": " << results[rank].status();
      EXPECT_NE(results[rank].status().message().find(
                    "the ranks' evaluations return different figures"),
                std::string::npos)
          << results[rank].status();
    }
  }
}

TEST(MetricsTest, AccuracyShardsAddUpToTheWholeTestSet) {
  const examples::Mlp model = test::TinyModel(1);
  const data::ImageDataset dataset = test::TinyDataset(3);  // 256 samples
  // Batches of 30: 9 batches, the last of 16.
  const MetricSum whole = AccuracySum(model, dataset, test::TinyForward, 30);
  EXPECT_EQ(whole.weight, test::kSamples);
  EXPECT_GT(whole.sum, 0);
  EXPECT_LT(whole.sum, test::kSamples);
  EXPECT_DOUBLE_EQ(EvaluateAccuracy(model, dataset, test::TinyForward, 30),
                   whole.sum / whole.weight);
  for (int64_t count = 1; count <= 10; ++count) {
    MetricSum added;
    for (int64_t index = 0; index < count; ++index) {
      const MetricSum part =
          AccuracySum(model, dataset, test::TinyForward, 30, {index, count});
      added.sum += part.sum;
      added.weight += part.weight;
    }
    EXPECT_EQ(added.sum, whole.sum) << count << " shards";
    EXPECT_EQ(added.weight, whole.weight) << count << " shards";
  }
}

}  // namespace
}  // namespace kindling::train
