// ParallelFor and ParallelSlabs: every index runs exactly once, on the pool
// or serially, whoever calls.
#include "kindling/backend/cpu/parallel.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

// Counts how often each of `total` items was visited by ParallelFor.
std::vector<int> VisitCounts(int64_t total, int64_t grain) {
  std::vector<std::atomic<int>> counts(total);
  ParallelFor(total, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) counts[i].fetch_add(1);
  });
  std::vector<int> result;
  for (const std::atomic<int>& count : counts) result.push_back(count.load());
  return result;
}

TEST(ParallelFor, VisitsEveryItemOnceWhenSplit) {
  EXPECT_EQ(std::vector<int>(100003, 1), VisitCounts(100003, 1000));
}

TEST(ParallelFor, VisitsEveryItemOnceBelowTheGrain) {
  EXPECT_EQ(std::vector<int>(17, 1), VisitCounts(17, 1000));
}

TEST(ParallelFor, ManyLoopsInARowAllComplete) {
  for (int round = 0; round < 2000; ++round) {
    std::atomic<int64_t> sum{0};
    ParallelFor(4096, 64, [&](int64_t begin, int64_t end) {
      int64_t local = 0;
      for (int64_t i = begin; i < end; ++i) local += i;
      sum.fetch_add(local);
    });
    ASSERT_EQ(4096 * 4095 / 2, sum.load()) << "round " << round;
  }
}

TEST(ParallelFor, NestedLoopRunsInsideTheOuterOne) {
  std::atomic<int64_t> visits{0};
  ParallelFor(64, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      ParallelFor(100, 1, [&](int64_t inner_begin, int64_t inner_end) {
        visits.fetch_add(inner_end - inner_begin);
      });
    }
  });
  EXPECT_EQ(6400, visits.load());
}

TEST(ParallelFor, ConcurrentCallersEachFinishTheirOwnLoop) {
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int caller = 0; caller < 4; ++caller) {
    callers.emplace_back([&sums, caller] {
      for (int round = 0; round < 200; ++round) {
        std::atomic<int64_t> sum{0};
        ParallelFor(10000, 100, [&](int64_t begin, int64_t end) {
          sum.fetch_add(end - begin);
        });
        sums[caller] += sum.load();
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(std::vector<int64_t>(4, 200 * 10000), sums);
}

TEST(ParallelSlabs, RunsEachSlabOnce) {
  std::vector<std::atomic<int>> counts(5);
  ParallelSlabs(5, [&](int64_t slab) { counts[slab].fetch_add(1); });
  for (int slab = 0; slab < 5; ++slab) EXPECT_EQ(1, counts[slab].load());
}

}  // namespace
}  // namespace kindling::cpu
