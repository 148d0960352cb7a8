#include "kindling/backend/cuda/cuda_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/memory_stats.h"
#include "tests/backend/cuda/fake_device_api.h"

namespace kindling::cuda {
namespace {

using ::kindling::cuda::testing::FakeDeviceApi;

constexpr size_t kMiB = size_t{1} << 20;
const DeviceApi::Stream kStreamA = FakeDeviceApi::StreamHandle(1);
const DeviceApi::Stream kStreamB = FakeDeviceApi::StreamHandle(2);
const DeviceApi::Stream kStreamC = FakeDeviceApi::StreamHandle(3);

CudaAllocator::Options TestOptions() {
  CudaAllocator::Options options;
  options.device_name = "fake:0";
  return options;
}

void* MustAllocate(CudaAllocator& allocator, size_t nbytes,
                   DeviceApi::Stream stream) {
  absl::StatusOr<void*> data = allocator.Allocate(nbytes, stream);
  EXPECT_TRUE(data.ok()) << data.status();
  return data.ok() ? *data : nullptr;
}

TEST(CudaAllocatorSizeClass, SmallRequestsRoundTo512Bytes) {
  EXPECT_EQ(CudaAllocator::SizeClass(1), 512u);
  EXPECT_EQ(CudaAllocator::SizeClass(512), 512u);
  EXPECT_EQ(CudaAllocator::SizeClass(513), 1024u);
  EXPECT_EQ(CudaAllocator::SizeClass(kMiB - 1), kMiB);
}

TEST(CudaAllocatorSizeClass, LargeRequestsHaveFourClassesPerDoubling) {
  EXPECT_EQ(CudaAllocator::SizeClass(kMiB), kMiB);
  EXPECT_EQ(CudaAllocator::SizeClass(kMiB + 1), kMiB + kMiB / 4);
  EXPECT_EQ(CudaAllocator::SizeClass(3 * kMiB), 3 * kMiB);
  EXPECT_EQ(CudaAllocator::SizeClass(3 * kMiB + 1), 3 * kMiB + kMiB / 2);
  EXPECT_EQ(CudaAllocator::SizeClass(100 * kMiB), 112 * kMiB);
}

TEST(CudaAllocatorSizeClass, WastesLessThanAQuarterOfALargeRequest) {
  for (size_t nbytes = kMiB; nbytes < 64 * kMiB; nbytes = nbytes * 9 / 8 + 1) {
    const size_t size = CudaAllocator::SizeClass(nbytes);
    EXPECT_GE(size, nbytes);
    EXPECT_LT(size - nbytes, nbytes / 4) << nbytes;
  }
}

TEST(CudaAllocator, ZeroBytesIsNullAndTouchesNothing) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  absl::StatusOr<void*> data = allocator.Allocate(0, kStreamA);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, nullptr);
  allocator.Deallocate(nullptr);
  EXPECT_EQ(device.mallocs(), 0);
}

TEST(CudaAllocator, FreedBlockIsReusedOnItsStreamWithoutDeviceCalls) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* first = MustAllocate(allocator, 3 * kMiB, kStreamA);
  allocator.Deallocate(first);
  void* second = MustAllocate(allocator, 3 * kMiB, kStreamA);
  EXPECT_EQ(second, first);
  EXPECT_EQ(device.mallocs(), 1);
  EXPECT_EQ(device.frees(), 0);
  EXPECT_EQ(device.records(), 0);  // same stream: no event needed
  EXPECT_EQ(allocator.stats().cache_hits, 1);
  allocator.Deallocate(second);
}

TEST(CudaAllocator, SmallerRequestReusesABlockAtMostAQuarterBigger) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* batch = MustAllocate(allocator, 4 * kMiB, kStreamA);
  allocator.Deallocate(batch);
  // 3.5 MiB: class 3.5 MiB, and a 4 MiB block is within a quarter of it.
  void* last_batch = MustAllocate(allocator, 3 * kMiB + kMiB / 2, kStreamA);
  EXPECT_EQ(last_batch, batch);
  allocator.Deallocate(last_batch);
  // 2 MiB may not pin a 4 MiB block.
  void* small = MustAllocate(allocator, 2 * kMiB, kStreamA);
  EXPECT_NE(small, batch);
  EXPECT_EQ(device.mallocs(), 2);
  allocator.Deallocate(small);
}

TEST(CudaAllocator, SmallBlocksAreReusedOnlyForTheirOwnClass) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 1000, kStreamA);  // class 1024
  allocator.Deallocate(block);
  void* other_class = MustAllocate(allocator, 100, kStreamA);  // class 512
  EXPECT_NE(other_class, block);
  void* same_class = MustAllocate(allocator, 600, kStreamA);  // class 1024
  EXPECT_EQ(same_class, block);
  allocator.Deallocate(other_class);
  allocator.Deallocate(same_class);
}

TEST(CudaAllocator, OtherStreamTakesAFreeBlockOnlyAfterWaitingForAnEvent) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* on_a = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.Deallocate(on_a);
  void* on_b = MustAllocate(allocator, 2 * kMiB, kStreamB);
  EXPECT_EQ(on_b, on_a);
  EXPECT_EQ(device.mallocs(), 1);
  ASSERT_EQ(device.waits().size(), 1u);
  EXPECT_EQ(device.waits()[0].first, kStreamB);   // B waits ...
  EXPECT_EQ(device.waits()[0].second, kStreamA);  // ... for A's event
  EXPECT_EQ(allocator.stats().cross_stream_reuses, 1);
  // The block now belongs to B: freed and taken again on B, no wait.
  allocator.Deallocate(on_b);
  void* again = MustAllocate(allocator, 2 * kMiB, kStreamB);
  EXPECT_EQ(again, on_a);
  EXPECT_EQ(device.waits().size(), 1u);
  allocator.Deallocate(again);
}

TEST(CudaAllocator, PrefersABlockOnItsOwnStream) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* on_a = MustAllocate(allocator, 2 * kMiB, kStreamA);
  void* on_b = MustAllocate(allocator, 2 * kMiB, kStreamB);
  allocator.Deallocate(on_a);
  allocator.Deallocate(on_b);
  EXPECT_EQ(MustAllocate(allocator, 2 * kMiB, kStreamB), on_b);
  EXPECT_EQ(MustAllocate(allocator, 2 * kMiB, kStreamA), on_a);
  EXPECT_TRUE(device.waits().empty());
  allocator.Deallocate(on_a);
  allocator.Deallocate(on_b);
}

TEST(CudaAllocator, BlockUsedOnAnotherStreamIsHeldBackUntilThatStreamIsDone) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.RecordStream(block, kStreamB);
  allocator.Deallocate(block);
  EXPECT_EQ(allocator.stats().pending_blocks, 1u);
  EXPECT_EQ(device.records(), 1);  // an event on B at the free
  // B has not finished: even stream A may not take it.
  void* while_b_runs = MustAllocate(allocator, 2 * kMiB, kStreamA);
  EXPECT_NE(while_b_runs, block);
  device.FinishStream(kStreamB);
  void* after_b = MustAllocate(allocator, 2 * kMiB, kStreamA);
  EXPECT_EQ(after_b, block);
  EXPECT_EQ(allocator.stats().pending_blocks, 0u);
  allocator.Deallocate(while_b_runs);
  allocator.Deallocate(after_b);
}

TEST(CudaAllocator, RecordStreamOnTheOwnStreamAddsNoEvent) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.RecordStream(block, kStreamA);
  allocator.Deallocate(block);
  EXPECT_EQ(allocator.stats().pending_blocks, 0u);
  EXPECT_EQ(device.records(), 0);
}

TEST(CudaAllocator, RecordStreamOnTheOwnStreamIsANoOpWithSeveralStreamsInUse) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* on_a = MustAllocate(allocator, 2 * kMiB, kStreamA);
  void* on_b = MustAllocate(allocator, 2 * kMiB, kStreamB);  // a 2nd stream
  allocator.RecordStream(on_a, kStreamA);
  allocator.RecordStream(static_cast<char*>(on_b) + 100, kStreamB);
  allocator.Deallocate(on_a);
  allocator.Deallocate(on_b);
  EXPECT_EQ(allocator.stats().pending_blocks, 0u);
  EXPECT_EQ(device.records(), 0);
}

TEST(CudaAllocator, InteriorPointerRecordsTheBlockHoldingIt) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* before = MustAllocate(allocator, 1000, kStreamA);
  void* block = MustAllocate(allocator, 3 * kMiB, kStreamA);
  void* after = MustAllocate(allocator, 1000, kStreamA);
  // A view's first element, and the block's last byte.
  allocator.RecordStream(static_cast<char*>(block) + 4096, kStreamB);
  allocator.RecordStream(static_cast<char*>(block) + 3 * kMiB - 1, kStreamC);
  allocator.Deallocate(before);
  allocator.Deallocate(after);
  EXPECT_EQ(allocator.stats().pending_blocks, 0u);  // only `block` was used
  allocator.Deallocate(block);
  EXPECT_EQ(allocator.stats().pending_blocks, 1u);
  EXPECT_EQ(device.records(), 2);  // one event on B, one on C
  device.FinishStream(kStreamB);
  device.FinishStream(kStreamC);
  EXPECT_EQ(MustAllocate(allocator, 3 * kMiB, kStreamA), block);
  allocator.Deallocate(block);
}

TEST(CudaAllocator, AddressesInNoBlockAreIgnored) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 2 * kMiB, kStreamA);
  int on_the_host = 0;
  // Memory the allocator does not own (borrowed), one past the block's end
  // (an empty view at its end), and nullptr (an empty tensor).
  allocator.RecordStream(&on_the_host, kStreamB);
  allocator.RecordStream(static_cast<char*>(block) + 2 * kMiB, kStreamB);
  allocator.RecordStream(nullptr, kStreamB);
  allocator.Deallocate(block);
  EXPECT_EQ(allocator.stats().pending_blocks, 0u);
  EXPECT_EQ(device.records(), 0);
}

TEST(CudaAllocator, BlockUsedOnSeveralStreamsWaitsForEachOfThem) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.RecordStream(block, kStreamB);
  allocator.RecordStream(block, kStreamC);
  allocator.RecordStream(block, kStreamB);  // recorded once per stream
  allocator.Deallocate(block);
  EXPECT_EQ(device.records(), 2);
  device.FinishStream(kStreamB);
  void* while_c_runs = MustAllocate(allocator, 2 * kMiB, kStreamA);
  EXPECT_NE(while_c_runs, block);
  EXPECT_EQ(allocator.stats().pending_blocks, 1u);
  device.FinishStream(kStreamC);
  void* after_c = MustAllocate(allocator, 2 * kMiB, kStreamA);
  EXPECT_EQ(after_c, block);
  allocator.Deallocate(while_c_runs);
  allocator.Deallocate(after_c);
}

TEST(CudaAllocator, HeldBackBlockGoesBackToItsOwnStreamOnceReleased) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.RecordStream(block, kStreamB);
  allocator.Deallocate(block);
  device.FinishStream(kStreamB);
  // Released, it is free on A again: B takes it through an event on A.
  void* on_b = MustAllocate(allocator, 2 * kMiB, kStreamB);
  EXPECT_EQ(on_b, block);
  ASSERT_EQ(device.waits().size(), 1u);
  EXPECT_EQ(device.waits()[0].first, kStreamB);
  EXPECT_EQ(device.waits()[0].second, kStreamA);
  allocator.Deallocate(on_b);
}

TEST(CudaAllocator, PendingBlocksCountHeldBackBlocksAsCached) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* first = MustAllocate(allocator, 2 * kMiB, kStreamA);
  void* second = MustAllocate(allocator, 4 * kMiB, kStreamA);
  allocator.RecordStream(first, kStreamB);
  allocator.RecordStream(second, kStreamC);
  allocator.Deallocate(first);
  allocator.Deallocate(second);
  CudaAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 2u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.cached_bytes, 6 * kMiB);
  device.FinishStream(kStreamB);
  void* again = MustAllocate(allocator, 2 * kMiB, kStreamA);  // releases
  EXPECT_EQ(again, first);
  stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 1u);
  EXPECT_EQ(stats.live_bytes, 2 * kMiB);
  EXPECT_EQ(stats.cached_bytes, 4 * kMiB);
  EXPECT_EQ(stats.device_mallocs, 2);
  allocator.Deallocate(again);
}

// The lock-free no-op must not hide a block of a second stream: once any
// block was allocated on B, a record on A (the first stream) looks it up.
TEST(CudaAllocator, RecordOnTheFirstStreamOfABlockFromASecondStreamHoldsIt) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* on_a = MustAllocate(allocator, 2 * kMiB, kStreamA);
  allocator.Deallocate(on_a);
  // B takes A's block (cross-stream reuse): it now belongs to B.
  void* on_b = MustAllocate(allocator, 2 * kMiB, kStreamB);
  ASSERT_EQ(on_b, on_a);
  allocator.RecordStream(on_b, kStreamA);
  allocator.Deallocate(on_b);
  EXPECT_EQ(allocator.stats().pending_blocks, 1u);
  void* while_a_runs = MustAllocate(allocator, 2 * kMiB, kStreamB);
  EXPECT_NE(while_a_runs, on_b);
  EXPECT_EQ(allocator.stats().device_mallocs, 2);
  allocator.Deallocate(while_a_runs);
}

TEST(CudaAllocator, CountsAllocatedReservedAndCachedBytes) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* a = MustAllocate(allocator, 3 * kMiB, kStreamA);
  void* b = MustAllocate(allocator, 1000, kStreamA);
  CudaAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.live_bytes, 3 * kMiB + 1024);
  EXPECT_EQ(stats.reserved_bytes, 3 * kMiB + 1024);
  EXPECT_EQ(stats.cached_bytes, 0u);
  allocator.Deallocate(a);
  stats = allocator.stats();
  EXPECT_EQ(stats.live_bytes, 1024u);
  EXPECT_EQ(stats.reserved_bytes, 3 * kMiB + 1024);
  EXPECT_EQ(stats.cached_bytes, 3 * kMiB);
  EXPECT_EQ(device.used_bytes(), 3 * kMiB + 1024);
  allocator.Deallocate(b);
}

TEST(CudaAllocator, EmptyCacheSynchronizesThenFreesEveryCachedBlock) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* live = MustAllocate(allocator, 2 * kMiB, kStreamA);
  void* cached = MustAllocate(allocator, 4 * kMiB, kStreamA);
  void* held_back = MustAllocate(allocator, 8 * kMiB, kStreamA);
  allocator.RecordStream(held_back, kStreamC);
  allocator.Deallocate(cached);
  allocator.Deallocate(held_back);
  EXPECT_EQ(allocator.EmptyCache(), 12 * kMiB);
  EXPECT_EQ(device.synchronizes(), 1);
  EXPECT_EQ(device.frees(), 2);
  EXPECT_EQ(device.used_bytes(), 2 * kMiB);
  const CudaAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes, 2 * kMiB);
  EXPECT_EQ(stats.cached_bytes, 0u);
  EXPECT_EQ(stats.pending_blocks, 0u);
  allocator.Deallocate(live);
}

TEST(CudaAllocator, OutOfMemoryEmptiesTheCacheAndRetries) {
  FakeDeviceApi device(10 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  // Two cached 4 MiB blocks: an 8 MiB request fits only once they are gone.
  void* a = MustAllocate(allocator, 4 * kMiB, kStreamA);
  void* b = MustAllocate(allocator, 4 * kMiB, kStreamA);
  allocator.Deallocate(a);
  allocator.Deallocate(b);
  void* big = MustAllocate(allocator, 8 * kMiB, kStreamA);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(device.frees(), 2);
  EXPECT_EQ(allocator.stats().out_of_memory_retries, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 8 * kMiB);
  allocator.Deallocate(big);
}

TEST(CudaAllocator, OutOfMemoryAfterRetryNamesRequestAndBytes) {
  FakeDeviceApi device(10 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* live = MustAllocate(allocator, 6 * kMiB, kStreamA);
  const absl::StatusOr<void*> result = allocator.Allocate(5 * kMiB, kStreamA);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string message(result.status().message());
  EXPECT_NE(message.find("fake:0 out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot allocate 5242880 bytes"), std::string::npos)
      << message;
  EXPECT_NE(message.find("allocated 6291456 bytes"), std::string::npos)
      << message;
  EXPECT_NE(message.find("reserved 6291456 bytes"), std::string::npos)
      << message;
  // Nothing changed: the live block is still there and usable.
  EXPECT_EQ(allocator.stats().live_bytes, 6 * kMiB);
  allocator.Deallocate(live);
}

TEST(CudaAllocator, ReportsCachedBytesToMemoryStats) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator::Options options = TestOptions();
  options.stats_device = Device::Cuda(63);  // a slot no other test uses
  const int64_t before = GetMemoryStats(Device::Cuda(63)).cached_bytes;
  {
    CudaAllocator allocator(&device, options);
    void* block = MustAllocate(allocator, 3 * kMiB, kStreamA);
    allocator.Deallocate(block);
    EXPECT_EQ(GetMemoryStats(Device::Cuda(63)).cached_bytes - before,
              static_cast<int64_t>(3 * kMiB));
    block = MustAllocate(allocator, 3 * kMiB, kStreamA);
    EXPECT_EQ(GetMemoryStats(Device::Cuda(63)).cached_bytes, before);
    allocator.Deallocate(block);
  }
  EXPECT_EQ(GetMemoryStats(Device::Cuda(63)).cached_bytes, before);
}

TEST(CudaAllocatorDeathTest, DoubleFreeAbortsNamingTheBlock) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, kMiB, kStreamA);
  allocator.Deallocate(block);
  EXPECT_DEATH(allocator.Deallocate(block), "not a live block");
}

TEST(CudaAllocatorDeathTest, RecordStreamOnAFreedBlockAbortsNamingIt) {
  FakeDeviceApi device(64 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  void* block = MustAllocate(allocator, kMiB, kStreamA);
  allocator.Deallocate(block);
  EXPECT_DEATH(allocator.RecordStream(static_cast<char*>(block) + 8, kStreamB),
               "which is not live \\(used after it was freed\\)");
}

TEST(CudaAllocator, ConcurrentAllocateAndFreeKeepCountsConsistent) {
  FakeDeviceApi device(1024 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] {
      const DeviceApi::Stream stream = FakeDeviceApi::StreamHandle(1 + t % 2);
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<void*> block =
            allocator.Allocate((1 + i % 7) * 100000, stream);
        ASSERT_TRUE(block.ok()) << block.status();
        allocator.Deallocate(*block);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const CudaAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.cached_bytes, stats.reserved_bytes);
  EXPECT_EQ(stats.reserved_bytes, device.used_bytes());
}

// Threads on streams of their own use blocks of a shared stream while one
// thread keeps finishing streams: the counts stay consistent, and every
// held-back block is released once every stream is done.
TEST(CudaAllocator, ConcurrentRecordsFreesAndCompletionsKeepCountsConsistent) {
  FakeDeviceApi device(1024 * kMiB);
  CudaAllocator allocator(&device, TestOptions());
  constexpr int kThreads = 4;
  std::atomic<bool> done{false};
  std::thread finisher([&device, &done] {
    while (!done.load()) {
      for (int n = 1; n <= 1 + kThreads; ++n) {
        device.FinishStream(FakeDeviceApi::StreamHandle(n));
      }
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&allocator, t] {
      const DeviceApi::Stream own = FakeDeviceApi::StreamHandle(2 + t);
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<void*> shared =
            allocator.Allocate((1 + i % 5) * 100000, kStreamA);
        ASSERT_TRUE(shared.ok()) << shared.status();
        absl::StatusOr<void*> mine = allocator.Allocate(100000, own);
        ASSERT_TRUE(mine.ok()) << mine.status();
        allocator.RecordStream(static_cast<char*>(*shared) + i, own);
        allocator.RecordStream(*mine, kStreamA);
        allocator.Deallocate(*shared);
        allocator.Deallocate(*mine);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  done.store(true);
  finisher.join();
  for (int n = 1; n <= 1 + kThreads; ++n) {
    device.FinishStream(FakeDeviceApi::StreamHandle(n));
  }
  void* last = MustAllocate(allocator, 100000, kStreamA);  // releases all
  allocator.Deallocate(last);
  const CudaAllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.pending_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.cached_bytes, stats.reserved_bytes);
  EXPECT_EQ(stats.reserved_bytes, device.used_bytes());
}

}  // namespace
}  // namespace kindling::cuda
