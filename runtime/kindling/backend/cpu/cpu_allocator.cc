#include "kindling/backend/cpu/cpu_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>

#include "kindling/core/check.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling::cpu {
namespace {

// aligned_alloc() wants a nonzero size that is a multiple of the alignment.
size_t RoundToAlignment(size_t nbytes) {
  const size_t alignment = CpuAllocator::kAlignment;
  return std::max<size_t>(1, (nbytes + alignment - 1) / alignment) * alignment;
}

// The largest block a request of `nbytes` may take from the cache: a quarter
// of waste at most, but never less than the request's own class.
size_t MaxReusableSize(size_t nbytes) {
  return std::max(CpuAllocator::SizeClass(nbytes), nbytes + nbytes / 4);
}

void* SystemAllocate(size_t size, size_t requested) {
  void* data = std::aligned_alloc(CpuAllocator::kAlignment, size);
  KINDLING_CHECK(data != nullptr,
                 "cpu: out of memory allocating %d bytes (block of %d)",
                 requested, size);
  return data;
}

}  // namespace

size_t CpuAllocator::SizeClass(size_t nbytes) {
  KINDLING_CHECK(nbytes >= kMinCachedBytes,
                 "cpu allocator: size class of %d bytes, below the %d-byte "
                 "minimum",
                 nbytes, kMinCachedBytes);
  const size_t power = std::bit_floor(nbytes);
  if (power == nbytes) return nbytes;
  // Four classes per doubling: multiples of a quarter of the power below.
  const size_t step = power / 4;
  return (nbytes + step - 1) / step * step;
}

CpuAllocator::CpuAllocator(Options options)
    : stats_device_(options.stats_device),
      max_cached_bytes_(options.max_cached_bytes) {}

CpuAllocator::~CpuAllocator() {
  EmptyCache();
  std::lock_guard<std::mutex> lock(mutex_);
  KINDLING_CHECK(live_blocks_.empty(),
                 "cpu allocator destroyed with %d large blocks (%d bytes) "
                 "still allocated",
                 live_blocks_.size(), stats_.live_bytes);
}

void* CpuAllocator::Allocate(size_t nbytes) {
  if (nbytes < kMinCachedBytes) {
    return SystemAllocate(RoundToAlignment(nbytes), nbytes);
  }
  const size_t size = SizeClass(nbytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const CachedBlock block = TakeCachedBlock(size, MaxReusableSize(nbytes));
    if (block.data != nullptr) {
      live_blocks_.emplace(block.data, block.size);
      stats_.live_bytes += block.size;
      ++stats_.cache_hits;
      ReportCachedBytes(-static_cast<int64_t>(block.size));
      return block.data;
    }
  }
  void* data = SystemAllocate(size, nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  live_blocks_.emplace(data, size);
  stats_.live_bytes += size;
  ++stats_.system_allocations;
  return data;
}

void CpuAllocator::Deallocate(void* data, size_t nbytes) {
  if (nbytes < kMinCachedBytes) {
    std::free(data);
    return;
  }
  std::vector<CachedBlock> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto live = live_blocks_.find(data);
    KINDLING_CHECK(live != live_blocks_.end(),
                   "cpu allocator: deallocating %p (%d bytes), which it did "
                   "not allocate as a large block",
                   data, nbytes);
    const size_t size = live->second;
    live_blocks_.erase(live);
    stats_.live_bytes -= size;
    if (size > max_cached_bytes_) {
      ++stats_.system_frees;
      evicted.push_back({data, size});
    } else {
      EvictUntil(max_cached_bytes_ - size, evicted);
      const uint64_t age = next_age_++;
      cache_by_size_.emplace(size, age);
      cache_by_age_.emplace(age, CachedBlock{data, size});
      stats_.cached_bytes += size;
      ++stats_.cached_blocks;
      ReportCachedBytes(static_cast<int64_t>(size));
    }
  }
  FreeToSystem(evicted);
}

size_t CpuAllocator::Trim(size_t max_cached_bytes) {
  std::vector<CachedBlock> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    EvictUntil(max_cached_bytes, evicted);
  }
  FreeToSystem(evicted);
  size_t freed = 0;
  for (const CachedBlock& block : evicted) freed += block.size;
  return freed;
}

void CpuAllocator::SetMaxCachedBytes(size_t max_cached_bytes) {
  std::vector<CachedBlock> evicted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    max_cached_bytes_ = max_cached_bytes;
    EvictUntil(max_cached_bytes, evicted);
  }
  FreeToSystem(evicted);
}

size_t CpuAllocator::max_cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_cached_bytes_;
}

size_t CpuAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_.cached_bytes;
}

CpuAllocatorStats CpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CpuAllocator::CachedBlock CpuAllocator::TakeCachedBlock(size_t size,
                                                        size_t max_size) {
  // The smallest cached size that fits, and of that size the most recently
  // freed block: its pages are the likeliest to still be in the TLB.
  auto smallest = cache_by_size_.lower_bound({size, 0});
  if (smallest == cache_by_size_.end() || smallest->first > max_size) {
    return {nullptr, 0};
  }
  const auto newest = std::prev(cache_by_size_.upper_bound(
      {smallest->first, std::numeric_limits<uint64_t>::max()}));
  auto entry = cache_by_age_.find(newest->second);
  const CachedBlock block = entry->second;
  cache_by_age_.erase(entry);
  cache_by_size_.erase(newest);
  stats_.cached_bytes -= block.size;
  --stats_.cached_blocks;
  return block;
}

void CpuAllocator::EvictUntil(size_t max_cached_bytes,
                              std::vector<CachedBlock>& evicted) {
  while (stats_.cached_bytes > max_cached_bytes) {
    auto oldest = cache_by_age_.begin();
    const CachedBlock block = oldest->second;
    cache_by_size_.erase({block.size, oldest->first});
    cache_by_age_.erase(oldest);
    stats_.cached_bytes -= block.size;
    --stats_.cached_blocks;
    ++stats_.system_frees;
    ReportCachedBytes(-static_cast<int64_t>(block.size));
    evicted.push_back(block);
  }
}

void CpuAllocator::FreeToSystem(const std::vector<CachedBlock>& blocks) {
  for (const CachedBlock& block : blocks) std::free(block.data);
}

void CpuAllocator::ReportCachedBytes(int64_t delta) const {
  if (stats_device_.has_value()) {
    internal::RecordCachedBytes(*stats_device_, delta);
  }
}

CpuAllocator& TheCpuAllocator() {
  // Never destroyed: tensors in static storage may free after main returns.
  static CpuAllocator* const allocator = [] {
    CpuAllocator::Options options;
    options.stats_device = Device::Cpu();
    return new CpuAllocator(options);
  }();
  return *allocator;
}

}  // namespace kindling::cpu
