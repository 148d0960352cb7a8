// CpuAllocator: 64-byte-aligned host memory with a trimmed cache of large
// blocks.
//
// glibc returns every block above 32 MiB to the kernel on free, so an op that
// allocates a 64 MiB result in a loop would page-fault all of it on every
// call and run at a fraction of memory bandwidth. Smaller blocks fare no
// better from 128 KiB (glibc's mmap threshold) up: glibc maps them, or carves
// them from the top of a heap it shrinks whenever enough is free there, so a
// loop that frees and reallocates them may fault their pages in again. The
// MLP of examples/mlp.h, whose activations and gradients are 128-784 KiB,
// took about 480 page faults a step that way in some runs and not others
// (it depends on where glibc placed each block), and its steps then took
// about 1.5 times as long. CpuAllocator keeps freed blocks of
// kMinCachedBytes (128 KiB) and more and hands them back to later
// allocations; smaller blocks go straight to malloc, whose arenas reuse them.
//
// Size classes. A large request is rounded up to a size class: a power of two
// or 1.25, 1.5 or 1.75 times one (4 classes per doubling), so a block wastes
// less than a quarter of the request. A request takes the smallest cached
// block of its class or larger, as long as that block is at most 1.25 times
// the request. So the smaller last batch of an epoch reuses the full batches'
// blocks when they are at most a quarter bigger than it needs, and otherwise
// gets blocks of its own class that the next epoch's last batch reuses: after
// the first epoch a training loop never asks the system for memory.
//
//   CpuAllocator allocator;
//   void* batch = allocator.Allocate(96 << 20);      // system: 96 MiB class
//   allocator.Deallocate(batch, 96 << 20);           // cached
//   void* last = allocator.Allocate(80 << 20);       // reuses the 96 MiB block
//
// Trimming. The cache holds at most max_cached_bytes() (kDefaultMaxCachedBytes
// unless SetMaxCachedBytes() says otherwise); freeing a block into a full
// cache first returns the least recently freed blocks to the system. Trim()
// and EmptyCache() return cached memory on request, e.g. between the phases
// of a program.
//
// Huge pages. Blocks of 8 MiB and more are mapped on their own at a 2 MiB
// boundary with MADV_HUGEPAGE, so first touching a fresh block faults once
// per 2 MiB instead of once per 4 KiB (a checkpoint load that converts into
// 312 MiB of fresh tensors went from 82,000 page faults to 2,300).
//
// MemoryStats. An allocator constructed with Options::stats_device reports its
// cached bytes to that device's MemoryStats (TheCpuAllocator() reports to the
// CPU), so GetMemoryStats() shows live, cached and reserved bytes.
//
// Thread safety: all members may be called from any thread (OpenMP workers
// and user threads alike). One mutex guards the cache; the system allocator
// is called outside it. It is a std::mutex rather than absl::Mutex because
// Debian's Abseil is not built with ThreadSanitizer, which would then not see
// the lock and report false races under --config=tsan.
#ifndef KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_
#define KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kindling/tensor/device.h"

namespace kindling::cpu {

// CpuAllocatorStats is a snapshot of one allocator's counters. The counters
// cover large blocks only (kMinCachedBytes and more); small ones go straight
// to malloc and are not counted.
struct CpuAllocatorStats {
  // Bytes and number of freed blocks held for reuse.
  size_t cached_bytes = 0;
  size_t cached_blocks = 0;
  // Bytes of large blocks handed out and not yet freed (whole blocks, so up to
  // a quarter more than was asked for).
  size_t live_bytes = 0;
  // Large blocks obtained from / returned to the system allocator.
  int64_t system_allocations = 0;
  int64_t system_frees = 0;
  // Large requests served from the cache.
  int64_t cache_hits = 0;
};

class CpuAllocator {
 public:
  static constexpr size_t kAlignment = 64;
  // Requests of this size and more are rounded to a size class and cached:
  // glibc's default mmap threshold (see the header comment).
  static constexpr size_t kMinCachedBytes = size_t{128} << 10;
  static constexpr size_t kDefaultMaxCachedBytes = size_t{1} << 30;

  struct Options {
    // The cache never holds more than this many bytes.
    size_t max_cached_bytes = kDefaultMaxCachedBytes;
    // Where to report cached bytes in MemoryStats; none for a private
    // allocator (tests) whose blocks no Storage counts.
    std::optional<Device> stats_device;
  };

  CpuAllocator() : CpuAllocator(Options()) {}
  explicit CpuAllocator(Options options);
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;
  // REQUIRES: every block has been deallocated (checked).
  ~CpuAllocator();

  // Allocate() returns at least `nbytes` bytes aligned to kAlignment; it
  // aborts when the system is out of memory.
  void* Allocate(size_t nbytes);
  // Deallocate() frees a block from Allocate().
  // REQUIRES: `nbytes` is the size it was allocated with (checked for large
  // blocks).
  void Deallocate(void* data, size_t nbytes);

  // Trim() returns the least recently freed cached blocks to the system until
  // at most `max_cached_bytes` remain, and returns the number of bytes freed.
  size_t Trim(size_t max_cached_bytes);
  // EmptyCache() returns every cached block to the system: Trim(0).
  size_t EmptyCache() { return Trim(0); }

  // SetMaxCachedBytes() changes the cache's cap and trims to it.
  void SetMaxCachedBytes(size_t max_cached_bytes);
  size_t max_cached_bytes() const;

  // cached_bytes() is the size of the cache now.
  size_t cached_bytes() const;
  CpuAllocatorStats stats() const;

  // SizeClass() is the block size a large request of `nbytes` is rounded to
  // (nbytes >= kMinCachedBytes).
  static size_t SizeClass(size_t nbytes);

 private:
  // A cached block is keyed by (size, age) for best-fit lookup and by age for
  // least-recently-freed eviction; `age` grows with every free.
  using SizeAndAge = std::pair<size_t, uint64_t>;
  struct CachedBlock {
    void* data;
    size_t size;
  };

  // TakeCachedBlock() removes and returns a cached block of at least `size`
  // and at most `max_size` bytes, or {nullptr, 0}.
  // REQUIRES: mutex_ held.
  CachedBlock TakeCachedBlock(size_t size, size_t max_size);
  // EvictUntil() moves the oldest cached blocks to `evicted` until at most
  // `max_cached_bytes` remain.
  // REQUIRES: mutex_ held.
  void EvictUntil(size_t max_cached_bytes, std::vector<CachedBlock>& evicted);
  // FreeToSystem() frees `blocks`; called without the lock held.
  void FreeToSystem(const std::vector<CachedBlock>& blocks);
  void ReportCachedBytes(int64_t delta) const;

  const std::optional<Device> stats_device_;
  // Guards every member below it.
  mutable std::mutex mutex_;
  size_t max_cached_bytes_;
  std::set<SizeAndAge> cache_by_size_;
  std::map<uint64_t, CachedBlock> cache_by_age_;
  uint64_t next_age_ = 0;
  // Large blocks handed out, with their real size: a block from the cache can
  // be larger than the request's class.
  absl::flat_hash_map<void*, size_t> live_blocks_;
  CpuAllocatorStats stats_;
};

// TheCpuAllocator() is the process-wide allocator the CPU backend uses; it
// reports its cache to GetMemoryStats(Device::Cpu()).
CpuAllocator& TheCpuAllocator();

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_CPU_ALLOCATOR_H_
