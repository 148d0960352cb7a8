#include "kindling/backend/cpu/cpu_allocator.h"

#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"

namespace kindling::cpu {
namespace {

TEST(CpuAllocatorTest, BlocksAreAlignedAndWritable) {
  CpuAllocator allocator;
  for (size_t size : {size_t{1}, size_t{63}, size_t{4096}, size_t{3} << 20}) {
    void* data = allocator.Allocate(size);
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(data) % CpuAllocator::kAlignment);
    std::memset(data, 0xab, size);
    allocator.Deallocate(data, size);
  }
}

TEST(CpuAllocatorTest, LargeBlocksAreReusedFromTheCache) {
  CpuAllocator allocator;
  const size_t size = size_t{8} << 20;
  void* first = allocator.Allocate(size);
  allocator.Deallocate(first, size);
  EXPECT_EQ(size, allocator.cached_bytes());
  void* second = allocator.Allocate(size);
  EXPECT_EQ(first, second);
  EXPECT_EQ(0u, allocator.cached_bytes());
  allocator.Deallocate(second, size);
  allocator.ReleaseCached();
  EXPECT_EQ(0u, allocator.cached_bytes());
}

TEST(CpuAllocatorTest, SmallBlocksAreNotCached) {
  CpuAllocator allocator;
  void* data = allocator.Allocate(1024);
  allocator.Deallocate(data, 1024);
  EXPECT_EQ(0u, allocator.cached_bytes());
}

}  // namespace
}  // namespace kindling::cpu
