// Param<T> shared across threads: concurrent first reads initialize once and
// every reader sees that value. Run under --config=tsan to check for races.
#include <atomic>
#include <cmath>
#include <latch>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/core/param.h"
#include "tests/core/counting_parameter.h"

namespace kindling {
namespace {

using ::kindling::testing::Counters;
using ::kindling::testing::CountingParam;
using ::kindling::testing::CountingParameter;
using ::kindling::testing::LazyCountingParam;

constexpr int kThreads = 8;

// Runs `body(thread_index)` on kThreads threads released at the same moment.
template <class F>
void RunConcurrently(F body) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// C++ has no Sync marker; the equivalent of Burn's `param_is_sync` is that a
// const Param can be read from many threads (the tests below, under tsan) and
// copied like a value.
static_assert(std::is_copy_constructible_v<CountingParam>);
static_assert(std::is_nothrow_move_constructible_v<CountingParam>);

TEST(ParamConcurrencyTest, ConcurrentValRunsInitializerOnceAndAllSeeOneValue) {
  for (int round = 0; round < 50; ++round) {
    Counters::Reset();
    const CountingParam param = LazyCountingParam({16, 16});
    std::vector<const void*> storages(kThreads, nullptr);
    std::vector<float> firsts(kThreads, 0.0f);
    RunConcurrently([&](int t) {
      const CountingParameter& value = param.val();
      storages[t] = value.storage_address();
      firsts[t] = value.data()[0];
    });
    EXPECT_EQ(1, Counters::init_calls().load()) << "round " << round;
    EXPECT_EQ(1, Counters::storage_allocations().load()) << "round " << round;
    for (int t = 1; t < kThreads; ++t) {
      EXPECT_EQ(storages[0], storages[t]);
      EXPECT_EQ(firsts[0], firsts[t]);
    }
  }
}

TEST(ParamConcurrencyTest, CopiesReadOnDifferentThreadsShareOneInitRun) {
  for (int round = 0; round < 50; ++round) {
    Counters::Reset();
    const CountingParam original = LazyCountingParam({8});
    // Each thread gets its own copy (the usual data-parallel pattern).
    std::vector<CountingParam> copies(kThreads, original);
    std::vector<const void*> storages(kThreads, nullptr);
    RunConcurrently([&](int t) { storages[t] = copies[t]->storage_address(); });
    EXPECT_EQ(1, Counters::init_calls().load());
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(original->storage_address(), storages[t]);
    }
  }
}

TEST(ParamConcurrencyTest, ConcurrentDerivedReadsInitializeTheChainOnce) {
  for (int round = 0; round < 50; ++round) {
    Counters::Reset();
    const CountingParam original = LazyCountingParam({4});
    const CountingParam doubled = original.init_mapper(
        [](CountingParameter p) { return p.Scaled(2.0f); });
    const CountingParam frozen = original.set_require_grad(false);
    std::vector<float> seen(kThreads, 0.0f);
    RunConcurrently([&](int t) {
      switch (t % 3) {
        case 0:
          seen[t] = original->data()[0];
          break;
        case 1:
          seen[t] = doubled->data()[0] / 2.0f;
          break;
        default:
          seen[t] = frozen->data()[0];
          break;
      }
    });
    EXPECT_EQ(1, Counters::init_calls().load());
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[0], seen[t]);
  }
}

TEST(ParamConcurrencyTest, ToDeviceRacingTheFirstReadOfADerivedParamIsSafe) {
  // to_device() of a derived param while other threads initialize it: the
  // mover must see either the lazy parent or the published value (it used to
  // be able to see neither). Readers of the param itself all share one value;
  // a moved copy is either that value moved, or (if it was retargeted while
  // still lazy) its own init run: twice some init fill, on device 1.
  for (int round = 0; round < 200; ++round) {
    const CountingParam doubled = LazyCountingParam({2}).init_mapper(
        [](CountingParameter p) { return p.Scaled(2.0f); });
    std::vector<float> read(kThreads, 0.0f);
    std::vector<float> moved(kThreads, 0.0f);
    std::vector<int> moved_device(kThreads, -1);
    RunConcurrently([&](int t) {
      if (t % 2 == 0) {
        read[t] = doubled->data()[0];
      } else {
        const CountingParam on_device_1 = doubled.to_device(1);
        moved[t] = on_device_1->data()[0];
        moved_device[t] = on_device_1->device();
      }
    });
    for (int t = 0; t < kThreads; ++t) {
      if (t % 2 == 0) {
        EXPECT_EQ(read[0], read[t]);
      } else {
        EXPECT_EQ(1, moved_device[t]);
        EXPECT_GT(moved[t], 0.0f);
        EXPECT_EQ(0.0f, std::fmod(moved[t], 2.0f));
      }
    }
  }
}

TEST(ParamConcurrencyTest, MetadataReadsRaceSafelyWithInitialization) {
  const CountingParam param = LazyCountingParam({3, 4}, /*device=*/1);
  std::atomic<int> wrong{0};
  RunConcurrently([&](int t) {
    if (t == 0) {
      (void)param.val();
      return;
    }
    for (int i = 0; i < 1000; ++i) {
      if (param.lazy_shape() != std::vector<int64_t>{3, 4}) wrong.fetch_add(1);
      if (param.lazy_device() != 1) wrong.fetch_add(1);
    }
  });
  EXPECT_EQ(0, wrong.load());
}

TEST(ParamConcurrencyTest, CopyingAndDroppingCopiesAcrossThreadsIsSafe) {
  const CountingParam param = LazyCountingParam({2});
  RunConcurrently([&](int) {
    for (int i = 0; i < 1000; ++i) {
      CountingParam copy = param;
      if (i == 500) (void)copy.val();
    }
  });
  EXPECT_TRUE(param.is_initialized());
}

}  // namespace
}  // namespace kindling
