// Param<Tensor<2>> over real tensors: the lazy contract checked with memory
// accounting, and concurrent first reads (Burn's param_is_sync and
// concurrent-init tests). Run under --config=tsan for races.
#include <atomic>
#include <latch>
#include <thread>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/core/param.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

using TensorParam = Param<Tensor<2>>;

constexpr int kThreads = 8;

// C++'s stand-in for Rust's Sync bound: a const Param<Tensor> is shared by
// reference across threads and copied like a value.
static_assert(std::is_copy_constructible_v<TensorParam>);
static_assert(std::is_nothrow_move_constructible_v<TensorParam>);

// A lazy [rows, cols] param initialized from a seeded normal; counts runs.
TensorParam LazyNormal(int64_t rows, int64_t cols, std::atomic<int>* runs) {
  return TensorParam::Uninitialized(
      ParamId::New(),
      [rows, cols, runs](const Device& device, bool require_grad) {
        runs->fetch_add(1);
        Generator generator(/*seed=*/99);
        return Tensor<2>::RandomNormal({rows, cols}, generator, 0, 1, device)
            .set_require_grad(require_grad);
      },
      Device::Cpu(), /*require_grad=*/true, Shape{rows, cols});
}

TEST(ParamTensorTest, LazyMetadataNeedsNoAllocation) {
  std::atomic<int> runs{0};
  ResetMemoryStats(Device::Cpu());
  const TensorParam param = LazyNormal(64, 32, &runs);
  EXPECT_EQ((Shape{64, 32}), param.lazy_shape());
  EXPECT_EQ(Device::Cpu(), param.lazy_device());
  EXPECT_TRUE(param.lazy_is_require_grad());
  EXPECT_EQ(0, runs.load());
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
}

TEST(ParamTensorTest, CopiesOfALazyParamAllocateNoTensorBytes) {
  std::atomic<int> runs{0};
  const TensorParam param = LazyNormal(128, 128, &runs);
  const int64_t live = GetMemoryStats(Device::Cpu()).live_bytes;
  ResetMemoryStats(Device::Cpu());
  std::vector<TensorParam> copies(16, param);
  const TensorParam frozen = param.set_require_grad(false);  // stays lazy
  EXPECT_EQ(0, GetMemoryStats(Device::Cpu()).allocation_count);
  EXPECT_EQ(live, GetMemoryStats(Device::Cpu()).live_bytes);
  EXPECT_EQ(0, runs.load());
  // Reading one copy initializes the shared state once, for all copies.
  (void)copies[3].val();
  EXPECT_EQ(1, runs.load());
  EXPECT_TRUE(param.is_initialized());
  EXPECT_TRUE(copies[0]->shares_storage_with(*param));
  EXPECT_FALSE(frozen->is_require_grad());
  EXPECT_TRUE(frozen->shares_storage_with(*param));  // tied weights
  EXPECT_EQ(1, runs.load());
}

TEST(ParamTensorTest, InitializedParamHoldsSeededValues) {
  std::atomic<int> runs{0};
  const TensorParam a = LazyNormal(4, 4, &runs);
  const TensorParam b = LazyNormal(4, 4, &runs);
  EXPECT_EQ(a->to_data<float>(), b->to_data<float>());  // same seed
  EXPECT_TRUE(a->is_require_grad());
}

TEST(ParamTensorTest, ConcurrentValRunsInitOnceAndAllSeeEqualData) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> runs{0};
    const TensorParam param = LazyNormal(32, 32, &runs);
    std::vector<const void*> storages(kThreads, nullptr);
    std::vector<std::vector<float>> seen(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        const Tensor<2>& value = param.val();
        storages[t] = value.base().storage().get();
        seen[t] = value.to_data<float>();
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(1, runs.load()) << "round " << round;
    for (int t = 1; t < kThreads; ++t) {
      EXPECT_EQ(storages[0], storages[t]);
      EXPECT_EQ(seen[0], seen[t]);
    }
  }
}

TEST(ParamTensorTest, LoadNeverRunsInit) {
  std::atomic<int> runs{0};
  const TensorParam param = LazyNormal(2, 2, &runs);
  const TensorParam loaded = param.load(Tensor<2>::Ones({2, 2}));
  EXPECT_EQ(0, runs.load());
  EXPECT_EQ((std::vector<float>(4, 1.0f)), loaded->to_data<float>());
  EXPECT_TRUE(loaded->is_require_grad());  // takes the param's flag
}

TEST(ParamTensorTest, TensorsDieWithTheirParams) {
  const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
  {
    std::atomic<int> runs{0};
    const TensorParam param = LazyNormal(100, 100, &runs);
    (void)param.val();
    EXPECT_EQ(before + 100 * 100 * 4, GetMemoryStats(Device::Cpu()).live_bytes);
  }
  EXPECT_EQ(before, GetMemoryStats(Device::Cpu()).live_bytes);
}

}  // namespace
}  // namespace kindling
