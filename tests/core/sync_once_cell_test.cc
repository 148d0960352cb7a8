#include "kindling/core/sync_once_cell.h"

#include <atomic>
#include <chrono>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kindling {
namespace {

// Safe as a global: constant-initialized, no static-init-order issues.
constinit SyncOnceCell<int> global_cell;

TEST(SyncOnceCellTest, DefaultConstructedIsEmpty) {
  SyncOnceCell<std::string> cell;
  EXPECT_EQ(nullptr, cell.get());
  EXPECT_FALSE(cell.is_initialized());
}

TEST(SyncOnceCellTest, ConstructedWithValueIsInitialized) {
  SyncOnceCell<std::string> cell(std::string("ready"));
  ASSERT_NE(nullptr, cell.get());
  EXPECT_EQ("ready", *cell.get());
  EXPECT_TRUE(cell.is_initialized());
}

TEST(SyncOnceCellTest, GetOrInitStoresTheInitializersValue) {
  SyncOnceCell<std::string> cell;
  const std::string& value = cell.get_or_init([] { return std::string("a"); });
  EXPECT_EQ("a", value);
  EXPECT_EQ(&value, cell.get());
}

TEST(SyncOnceCellTest, GetOrInitOnFullCellDoesNotCallInitializer) {
  SyncOnceCell<int> cell(7);
  int calls = 0;
  EXPECT_EQ(7, cell.get_or_init([&] {
    ++calls;
    return 8;
  }));
  EXPECT_EQ(0, calls);
}

TEST(SyncOnceCellTest, SecondGetOrInitKeepsTheFirstValue) {
  SyncOnceCell<int> cell;
  EXPECT_EQ(1, cell.get_or_init([] { return 1; }));
  EXPECT_EQ(1, cell.get_or_init([] { return 2; }));
}

TEST(SyncOnceCellTest, SetOnEmptyCellStoresValue) {
  SyncOnceCell<int> cell;
  EXPECT_TRUE(cell.set(5));
  ASSERT_NE(nullptr, cell.get());
  EXPECT_EQ(5, *cell.get());
}

TEST(SyncOnceCellTest, SetOnFullCellKeepsValueAndReturnsFalse) {
  SyncOnceCell<int> cell(5);
  EXPECT_FALSE(cell.set(6));
  EXPECT_EQ(5, *cell.get());
}

TEST(SyncOnceCellTest, ThrowingInitializerLeavesCellEmptyForTheNextCaller) {
  SyncOnceCell<int> cell;
  EXPECT_THROW(cell.get_or_init([]() -> int { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_FALSE(cell.is_initialized());
  EXPECT_EQ(3, cell.get_or_init([] { return 3; }));
}

TEST(SyncOnceCellTest, GlobalCellWorks) {
  EXPECT_EQ(42, global_cell.get_or_init([] { return 42; }));
}

TEST(SyncOnceCellTest, ConcurrentGetOrInitRunsExactlyOneInitializer) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 20; ++round) {
    SyncOnceCell<std::vector<int>> cell;
    std::atomic<int> calls{0};
    std::latch start(kThreads);
    std::vector<const std::vector<int>*> seen(kThreads, nullptr);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        seen[t] = &cell.get_or_init([&] {
          calls.fetch_add(1);
          // Keep the initializer running while the others arrive.
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          return std::vector<int>{t, t, t};
        });
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(1, calls.load());
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(cell.get(), seen[t]) << "thread " << t;
    }
  }
}

TEST(SyncOnceCellTest, ReadersRacingAWriterSeeNothingOrTheWholeValue) {
  SyncOnceCell<std::vector<int>> cell;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      if (const std::vector<int>* value = cell.get()) {
        ASSERT_EQ(1000u, value->size());
        ASSERT_EQ(999, value->back());
      }
    }
  });
  std::vector<int> full(1000);
  for (int i = 0; i < 1000; ++i) full[i] = i;
  EXPECT_TRUE(cell.set(full));
  done.store(true);
  reader.join();
}

}  // namespace
}  // namespace kindling
