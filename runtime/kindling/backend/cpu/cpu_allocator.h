// CpuAllocator: 64-byte-aligned host memory with a cache of large blocks.
//
// glibc returns every block above 32 MiB to the kernel on free, so an op that
// allocates a 64 MiB result in a loop would page-fault all of it on every
// call and run at a fraction of memory bandwidth. CpuAllocator keeps freed
// blocks of 1 MiB and more (up to a total of kMaxCachedBytes) and hands them
// back to allocations of the same rounded size; small blocks go straight to
// malloc. Cached blocks are not live tensor memory, so MemoryStats does not
// count them; ReleaseCached() returns them to the system.
//
// Thread safety: all members may be called from any thread.
#ifndef KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_
#define KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_

#include <cstddef>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace kindling::cpu {

class CpuAllocator {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMinCachedBytes = size_t{1} << 20;
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;

  CpuAllocator() = default;
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;
  ~CpuAllocator();

  // Allocate() aborts when the system is out of memory.
  void* Allocate(size_t nbytes);
  void Deallocate(void* data, size_t nbytes);

  // ReleaseCached() frees every cached block.
  void ReleaseCached();
  // cached_bytes() is the size of the cache now.
  size_t cached_bytes() const;

 private:
  absl::Mutex mutex_;
  std::multimap<size_t, void*> cache_ ABSL_GUARDED_BY(mutex_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mutex_) = 0;
};

// TheCpuAllocator() is the process-wide allocator the CPU backend uses.
CpuAllocator& TheCpuAllocator();

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_
