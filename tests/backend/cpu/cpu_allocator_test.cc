#include "kindling/backend/cpu/cpu_allocator.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace kindling::cpu {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

CpuAllocator::Options WithMaxCachedBytes(size_t max_cached_bytes) {
  CpuAllocator::Options options;
  options.max_cached_bytes = max_cached_bytes;
  return options;
}

TEST(CpuAllocatorTest, BlocksAreAlignedAndWritable) {
  CpuAllocator allocator;
  for (size_t size :
       {size_t{0}, size_t{1}, size_t{63}, size_t{4096}, 3 * kMiB}) {
    void* data = allocator.Allocate(size);
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(data) % CpuAllocator::kAlignment);
    std::memset(data, 0xab, size);
    allocator.Deallocate(data, size);
  }
}

// Blocks of 8 MiB and more are mapped on their own at a 2 MiB (huge page)
// boundary; every byte is usable, and freeing returns them (EmptyCache).
TEST(CpuAllocatorTest, HugeBlocksAreHugePageAlignedAndWritable) {
  CpuAllocator allocator;
  std::vector<std::pair<void*, size_t>> blocks;
  for (size_t size : {8 * kMiB, 10 * kMiB + 1, 48 * kMiB}) {
    void* data = allocator.Allocate(size);
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(data) % (2 * kMiB)) << size;
    std::memset(data, 0x5a, size);
    EXPECT_EQ(0x5a, static_cast<unsigned char*>(data)[size - 1]);
    blocks.emplace_back(data, size);
  }
  for (auto [data, size] : blocks) allocator.Deallocate(data, size);
  EXPECT_EQ(8 * kMiB + 12 * kMiB + 48 * kMiB, allocator.EmptyCache());
  // A block above the cache cap is unmapped right away.
  CpuAllocator small_cache(WithMaxCachedBytes(4 * kMiB));
  void* data = small_cache.Allocate(16 * kMiB);
  std::memset(data, 1, 16 * kMiB);
  small_cache.Deallocate(data, 16 * kMiB);
  EXPECT_EQ(1, small_cache.stats().system_frees);
}

TEST(CpuAllocatorTest, SizeClassesHaveFourStepsPerDoubling) {
  EXPECT_EQ(kMiB, CpuAllocator::SizeClass(kMiB));
  EXPECT_EQ(kMiB + kMiB / 4, CpuAllocator::SizeClass(kMiB + 1));
  EXPECT_EQ(kMiB + kMiB / 2, CpuAllocator::SizeClass(kMiB + kMiB / 4 + 1));
  EXPECT_EQ(2 * kMiB, CpuAllocator::SizeClass(2 * kMiB - 1));
  EXPECT_EQ(96 * kMiB, CpuAllocator::SizeClass(80 * kMiB + 1));
}

TEST(CpuAllocatorTest, SizeClassesWasteLessThanAQuarter) {
  std::mt19937_64 random(7);
  for (int i = 0; i < 10000; ++i) {
    const size_t nbytes = kMiB + random() % (size_t{1} << 34);
    const size_t size = CpuAllocator::SizeClass(nbytes);
    ASSERT_GE(size, nbytes);
    ASSERT_LT(size - nbytes, nbytes / 4) << nbytes;
    ASSERT_EQ(0u, size % CpuAllocator::kAlignment) << nbytes;
  }
}

TEST(CpuAllocatorTest, LargeBlocksAreReusedFromTheCache) {
  CpuAllocator allocator;
  const size_t size = 8 * kMiB;
  void* first = allocator.Allocate(size);
  allocator.Deallocate(first, size);
  EXPECT_EQ(size, allocator.cached_bytes());
  void* second = allocator.Allocate(size);
  EXPECT_EQ(first, second);
  EXPECT_EQ(0u, allocator.cached_bytes());
  allocator.Deallocate(second, size);
  EXPECT_EQ(size, allocator.EmptyCache());
  EXPECT_EQ(0u, allocator.cached_bytes());
}

TEST(CpuAllocatorTest, SmallBlocksAreNotCached) {
  CpuAllocator allocator;
  for (size_t size : {size_t{1024}, CpuAllocator::kMinCachedBytes - 1}) {
    void* data = allocator.Allocate(size);
    allocator.Deallocate(data, size);
  }
  EXPECT_EQ(0u, allocator.cached_bytes());
  EXPECT_EQ(0, allocator.stats().system_allocations);
}

// The blocks of a small model's step (a [128, 256] f32 activation is
// 128 KiB, a 784 x 256 weight's gradient 784 KiB) are cached, not handed back
// to glibc to be faulted in again on the next step.
TEST(CpuAllocatorTest, BlocksFrom128KiBAreCached) {
  EXPECT_EQ(size_t{128} << 10, CpuAllocator::kMinCachedBytes);
  CpuAllocator allocator;
  for (size_t size : {size_t{128} << 10, size_t{784} << 10}) {
    void* first = allocator.Allocate(size);
    allocator.Deallocate(first, size);
    EXPECT_EQ(CpuAllocator::SizeClass(size), allocator.cached_bytes());
    void* second = allocator.Allocate(size);
    EXPECT_EQ(first, second) << size;
    allocator.Deallocate(second, size);
    EXPECT_EQ(CpuAllocator::SizeClass(size), allocator.EmptyCache());
  }
  EXPECT_EQ(2, allocator.stats().system_allocations);
  EXPECT_EQ(2, allocator.stats().cache_hits);
}

TEST(CpuAllocatorTest, SmallerRequestReusesABlockAtMostAQuarterBigger) {
  CpuAllocator allocator;
  void* full = allocator.Allocate(8 * kMiB);
  allocator.Deallocate(full, 8 * kMiB);

  // 8 MiB is within a quarter of 7 MiB: reused, and freed as an 8 MiB block.
  void* smaller = allocator.Allocate(7 * kMiB);
  EXPECT_EQ(full, smaller);
  EXPECT_EQ(8 * kMiB, allocator.stats().live_bytes);
  allocator.Deallocate(smaller, 7 * kMiB);
  EXPECT_EQ(8 * kMiB, allocator.cached_bytes());

  // 8 MiB is more than a quarter above 6 MiB: a new 6 MiB block.
  void* much_smaller = allocator.Allocate(6 * kMiB);
  EXPECT_NE(full, much_smaller);
  EXPECT_EQ(2, allocator.stats().system_allocations);
  EXPECT_EQ(1, allocator.stats().cache_hits);
  allocator.Deallocate(much_smaller, 6 * kMiB);
}

TEST(CpuAllocatorTest, PrefersTheSmallestFittingBlock) {
  CpuAllocator allocator;
  void* big = allocator.Allocate(10 * kMiB);
  void* exact = allocator.Allocate(8 * kMiB);
  allocator.Deallocate(exact, 8 * kMiB);
  allocator.Deallocate(big, 10 * kMiB);
  void* reused = allocator.Allocate(8 * kMiB);
  EXPECT_EQ(exact, reused);
  allocator.Deallocate(reused, 8 * kMiB);
}

// One training step: the forward pass allocates activations proportional to
// the batch, the backward pass their gradients, then everything is freed in
// reverse (as tensors go out of scope).
void TrainingStep(CpuAllocator& allocator, size_t batch) {
  constexpr size_t kFeatureBytes[] = {784 * 4, 1024 * 4, 512 * 4, 3000 * 4};
  std::vector<std::pair<void*, size_t>> blocks;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t feature_bytes : kFeatureBytes) {
      const size_t nbytes = batch * feature_bytes;
      blocks.emplace_back(allocator.Allocate(nbytes), nbytes);
    }
  }
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    allocator.Deallocate(it->first, it->second);
  }
}

// Epoch() runs 5 full batches and one last, smaller batch.
void Epoch(CpuAllocator& allocator, size_t batch, size_t last_batch) {
  for (int step = 0; step < 5; ++step) TrainingStep(allocator, batch);
  TrainingStep(allocator, last_batch);
}

TEST(CpuAllocatorTest, TrainingLoopUsesTheSystemOnlyInTheFirstEpoch) {
  CpuAllocator allocator;
  Epoch(allocator, 512, 300);
  const CpuAllocatorStats after_first_epoch = allocator.stats();
  EXPECT_GT(after_first_epoch.system_allocations, 0);
  for (int epoch = 1; epoch < 5; ++epoch) Epoch(allocator, 512, 300);
  const CpuAllocatorStats after_last_epoch = allocator.stats();
  EXPECT_EQ(after_first_epoch.system_allocations,
            after_last_epoch.system_allocations);
  EXPECT_EQ(0, after_last_epoch.system_frees);
  EXPECT_EQ(0u, after_last_epoch.live_bytes);
}

// With 480 of 512 rows, every full-batch block is at most a quarter bigger
// than the last batch's request, so even the first epoch's last step reuses.
TEST(CpuAllocatorTest, LastBatchNearTheFullSizeReusesTheFullBatchBlocks) {
  CpuAllocator allocator;
  TrainingStep(allocator, 512);
  const int64_t after_first_step = allocator.stats().system_allocations;
  for (int epoch = 0; epoch < 3; ++epoch) Epoch(allocator, 512, 480);
  EXPECT_EQ(after_first_step, allocator.stats().system_allocations);
}

TEST(CpuAllocatorTest, TrimFreesTheLeastRecentlyFreedBlocksFirst) {
  CpuAllocator allocator;
  void* oldest = allocator.Allocate(2 * kMiB);
  void* middle = allocator.Allocate(4 * kMiB);
  void* newest = allocator.Allocate(8 * kMiB);
  allocator.Deallocate(oldest, 2 * kMiB);
  allocator.Deallocate(middle, 4 * kMiB);
  allocator.Deallocate(newest, 8 * kMiB);
  ASSERT_EQ(14 * kMiB, allocator.cached_bytes());

  EXPECT_EQ(2 * kMiB, allocator.Trim(13 * kMiB));
  EXPECT_EQ(12 * kMiB, allocator.cached_bytes());
  EXPECT_EQ(4 * kMiB, allocator.Trim(8 * kMiB));
  EXPECT_EQ(8 * kMiB, allocator.cached_bytes());
  EXPECT_EQ(0u, allocator.Trim(8 * kMiB));
  EXPECT_EQ(1u, allocator.stats().cached_blocks);
  EXPECT_EQ(2, allocator.stats().system_frees);

  void* reused = allocator.Allocate(8 * kMiB);
  EXPECT_EQ(newest, reused);
  allocator.Deallocate(reused, 8 * kMiB);
  EXPECT_EQ(8 * kMiB, allocator.EmptyCache());
  EXPECT_EQ(0u, allocator.stats().cached_blocks);
  EXPECT_EQ(3, allocator.stats().system_frees);
}

TEST(CpuAllocatorTest, FullCacheEvictsTheLeastRecentlyFreedBlock) {
  CpuAllocator allocator(WithMaxCachedBytes(10 * kMiB));
  void* first = allocator.Allocate(4 * kMiB);
  void* second = allocator.Allocate(4 * kMiB);
  void* third = allocator.Allocate(4 * kMiB);
  allocator.Deallocate(first, 4 * kMiB);
  allocator.Deallocate(second, 4 * kMiB);
  allocator.Deallocate(third, 4 * kMiB);
  EXPECT_EQ(8 * kMiB, allocator.cached_bytes());
  EXPECT_EQ(1, allocator.stats().system_frees);

  // `first` went back to the system; the two cached are reused newest first.
  void* a = allocator.Allocate(4 * kMiB);
  void* b = allocator.Allocate(4 * kMiB);
  EXPECT_EQ(third, a);
  EXPECT_EQ(second, b);
  allocator.Deallocate(a, 4 * kMiB);
  allocator.Deallocate(b, 4 * kMiB);
}

TEST(CpuAllocatorTest, BlockLargerThanTheCapIsNotCached) {
  CpuAllocator allocator(WithMaxCachedBytes(4 * kMiB));
  void* cached = allocator.Allocate(2 * kMiB);
  allocator.Deallocate(cached, 2 * kMiB);
  void* huge = allocator.Allocate(8 * kMiB);
  allocator.Deallocate(huge, 8 * kMiB);
  EXPECT_EQ(2 * kMiB, allocator.cached_bytes());
  EXPECT_EQ(1, allocator.stats().system_frees);
}

TEST(CpuAllocatorTest, LoweringTheCapTrims) {
  CpuAllocator allocator;
  void* a = allocator.Allocate(4 * kMiB);
  void* b = allocator.Allocate(4 * kMiB);
  allocator.Deallocate(a, 4 * kMiB);
  allocator.Deallocate(b, 4 * kMiB);
  allocator.SetMaxCachedBytes(5 * kMiB);
  EXPECT_EQ(5 * kMiB, allocator.max_cached_bytes());
  EXPECT_EQ(4 * kMiB, allocator.cached_bytes());
}

// The stats of a private allocator go to a device no backend uses, so the
// numbers are this test's alone. RecordAllocation/RecordDeallocation stand in
// for Storage, which calls them around the backend's Allocate/Deallocate.
TEST(CpuAllocatorTest, ReportsCachedAndReservedBytesToMemoryStats) {
  const Device device = Device::Cuda(61);
  CpuAllocator::Options options;
  options.stats_device = device;
  CpuAllocator allocator(options);
  const MemoryStats before = GetMemoryStats(device);
  EXPECT_EQ(0, before.cached_bytes);

  const int64_t nbytes = 7 * kMiB + 4096;  // an 8 MiB block
  void* data = allocator.Allocate(nbytes);
  internal::RecordAllocation(device, nbytes);
  MemoryStats stats = GetMemoryStats(device);
  EXPECT_EQ(nbytes, stats.live_bytes);
  EXPECT_EQ(0, stats.cached_bytes);
  EXPECT_EQ(nbytes, stats.reserved_bytes);
  EXPECT_EQ(nbytes, stats.peak_reserved_bytes);

  allocator.Deallocate(data, nbytes);
  internal::RecordDeallocation(device, nbytes);
  stats = GetMemoryStats(device);
  EXPECT_EQ(0, stats.live_bytes);
  EXPECT_EQ(int64_t{8 * kMiB}, stats.cached_bytes);
  EXPECT_EQ(int64_t{8 * kMiB}, stats.reserved_bytes);
  // The moment the block counted as both live and cached does not show.
  EXPECT_EQ(int64_t{8 * kMiB}, stats.peak_reserved_bytes);
  EXPECT_EQ(nbytes, stats.peak_live_bytes);

  // Reuse moves the block from cached back to live.
  data = allocator.Allocate(nbytes);
  internal::RecordAllocation(device, nbytes);
  stats = GetMemoryStats(device);
  EXPECT_EQ(0, stats.cached_bytes);
  EXPECT_EQ(nbytes, stats.reserved_bytes);
  allocator.Deallocate(data, nbytes);
  internal::RecordDeallocation(device, nbytes);

  EXPECT_EQ(8 * kMiB, allocator.EmptyCache());
  stats = GetMemoryStats(device);
  EXPECT_EQ(0, stats.cached_bytes);
  EXPECT_EQ(0, stats.reserved_bytes);
  EXPECT_EQ(int64_t{8 * kMiB}, stats.peak_reserved_bytes);
  ResetMemoryStats(device);
  EXPECT_EQ(0, GetMemoryStats(device).peak_reserved_bytes);
}

TEST(CpuAllocatorTest, CpuMemoryStatsShowTheBackendCache) {
  CpuAllocator& allocator = TheCpuAllocator();
  allocator.EmptyCache();
  const MemoryStats before = GetMemoryStats(Device::Cpu());
  EXPECT_EQ(0, before.cached_bytes);
  {
    const Tensor<2> batch = Tensor<2>::Zeros({1024, 1024});  // 4 MiB
    const MemoryStats during = GetMemoryStats(Device::Cpu());
    EXPECT_EQ(before.live_bytes + int64_t{4 * kMiB}, during.live_bytes);
    EXPECT_EQ(during.live_bytes + during.cached_bytes, during.reserved_bytes);
  }
  MemoryStats after = GetMemoryStats(Device::Cpu());
  EXPECT_EQ(before.live_bytes, after.live_bytes);
  EXPECT_EQ(int64_t{4 * kMiB}, after.cached_bytes);
  EXPECT_EQ(static_cast<int64_t>(allocator.cached_bytes()), after.cached_bytes);
  EXPECT_EQ(after.live_bytes + after.cached_bytes, after.reserved_bytes);
  EXPECT_GE(after.peak_reserved_bytes, after.reserved_bytes);
  EXPECT_GE(after.peak_reserved_bytes, after.peak_live_bytes);

  allocator.EmptyCache();
  after = GetMemoryStats(Device::Cpu());
  EXPECT_EQ(0, after.cached_bytes);
  EXPECT_EQ(after.live_bytes, after.reserved_bytes);
}

TEST(CpuAllocatorTest, ConcurrentAllocationsKeepTheCountersConsistent) {
  CpuAllocator allocator(WithMaxCachedBytes(64 * kMiB));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] {
      std::mt19937 random(t);
      for (int i = 0; i < 300; ++i) {
        const size_t nbytes = kMiB + random() % (8 * kMiB);
        auto* data = static_cast<unsigned char*>(allocator.Allocate(nbytes));
        data[0] = static_cast<unsigned char>(t);
        data[nbytes - 1] = static_cast<unsigned char>(t);
        if (i % 50 == 0) allocator.Trim(16 * kMiB);
        allocator.Deallocate(data, nbytes);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const CpuAllocatorStats stats = allocator.stats();
  EXPECT_EQ(0u, stats.live_bytes);
  EXPECT_LE(stats.cached_bytes, 64 * kMiB);
  EXPECT_EQ(stats.system_allocations - stats.system_frees,
            static_cast<int64_t>(stats.cached_blocks));
  EXPECT_EQ(4 * 300, stats.system_allocations + stats.cache_hits);
}

TEST(CpuAllocatorDeathTest, DeallocatingAForeignLargeBlockAborts) {
  CpuAllocator allocator;
  std::vector<unsigned char> foreign(2 * kMiB);
  EXPECT_DEATH(allocator.Deallocate(foreign.data(), foreign.size()),
               "did not allocate");
}

}  // namespace
}  // namespace kindling::cpu
