#include "kindling/backend/cpu/cpu_allocator.h"

#include <cstdlib>

#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// Large blocks are rounded to whole pages so that near sizes share the cache.
size_t RoundedSize(size_t nbytes) {
  const size_t unit = nbytes >= CpuAllocator::kMinCachedBytes
                          ? size_t{4096}
                          : CpuAllocator::kAlignment;
  return (nbytes + unit - 1) / unit * unit;
}

}  // namespace

CpuAllocator::~CpuAllocator() { ReleaseCached(); }

void* CpuAllocator::Allocate(size_t nbytes) {
  const size_t size = RoundedSize(nbytes);
  if (size >= kMinCachedBytes) {
    absl::MutexLock lock(&mutex_);
    auto it = cache_.find(size);
    if (it != cache_.end()) {
      void* data = it->second;
      cache_.erase(it);
      cached_bytes_ -= size;
      return data;
    }
  }
  void* data = std::aligned_alloc(kAlignment, size);
  KINDLING_CHECK(data != nullptr, "cpu: out of memory allocating %d bytes",
                 nbytes);
  return data;
}

void CpuAllocator::Deallocate(void* data, size_t nbytes) {
  const size_t size = RoundedSize(nbytes);
  if (size >= kMinCachedBytes) {
    absl::MutexLock lock(&mutex_);
    if (cached_bytes_ + size <= kMaxCachedBytes) {
      cache_.emplace(size, data);
      cached_bytes_ += size;
      return;
    }
  }
  std::free(data);
}

void CpuAllocator::ReleaseCached() {
  absl::MutexLock lock(&mutex_);
  for (auto& [size, data] : cache_) std::free(data);
  cache_.clear();
  cached_bytes_ = 0;
}

size_t CpuAllocator::cached_bytes() const {
  absl::MutexLock lock(const_cast<absl::Mutex*>(&mutex_));
  return cached_bytes_;
}

CpuAllocator& TheCpuAllocator() {
  // Never destroyed: tensors in static storage may free after main returns.
  static CpuAllocator* const allocator = new CpuAllocator();
  return *allocator;
}

}  // namespace kindling::cpu
