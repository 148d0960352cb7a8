// MemoryStats: how many tensor bytes each device holds, for tests,
// checkpoint loading and benchmarks.
//
// Every storage a backend allocates for a tensor is counted against its device
// until the last tensor viewing it dies. Memory a tensor merely borrows
// (Storage::Borrow, e.g. a memory-mapped checkpoint) is not counted: it was
// never allocated by Kindling. A backend's allocator that keeps freed blocks
// for reuse (the CPU's does) reports them as cached; live plus cached is what
// the process holds for tensors (reserved).
//
//   kindling::ResetMemoryStats(kindling::Device::Cpu());
//   {
//     auto t = kindling::Tensor<2>::Zeros({256, 256});
//     kindling::GetMemoryStats(kindling::Device::Cpu()).live_bytes;  // 262144
//   }
//   const kindling::MemoryStats stats =
//       kindling::GetMemoryStats(kindling::Device::Cpu());
//   stats.live_bytes;       // 0
//   stats.peak_live_bytes;  // 262144
//
// The counters are process-wide atomics, safe to update and read from any
// thread; a reading taken while other threads allocate is a snapshot.
#ifndef KINDLING_TENSOR_MEMORY_STATS_H_
#define KINDLING_TENSOR_MEMORY_STATS_H_

#include <cstdint>

#include "kindling/tensor/device.h"

namespace kindling {

// MemoryStats is one device's counters.
struct MemoryStats {
  // Bytes of tensor storage allocated and not yet freed.
  int64_t live_bytes = 0;
  // The highest live_bytes since the last ResetMemoryStats().
  int64_t peak_live_bytes = 0;
  // Storages allocated since the last ResetMemoryStats().
  int64_t allocation_count = 0;
  // Bytes of freed blocks the device's allocator keeps for reuse.
  int64_t cached_bytes = 0;
  // live_bytes + cached_bytes. live_bytes counts what tensors asked for and
  // cached_bytes whole blocks, so a block freed into the cache adds its
  // rounding (under a quarter of its size) to reserved_bytes.
  int64_t reserved_bytes = 0;
  // The highest reserved_bytes since the last ResetMemoryStats(), taken
  // whenever a storage is allocated or freed.
  int64_t peak_reserved_bytes = 0;
};

// GetMemoryStats() reads the counters of `device`.
MemoryStats GetMemoryStats(const Device& device);

// ResetMemoryStats() sets peak_live_bytes to the current live_bytes,
// peak_reserved_bytes to the current reserved_bytes and allocation_count to
// zero. live_bytes and cached_bytes are never reset: they are facts, not
// statistics.
void ResetMemoryStats(const Device& device);

namespace internal {

// Called by Storage when it allocates or frees owned memory.
void RecordAllocation(const Device& device, int64_t nbytes);
void RecordDeallocation(const Device& device, int64_t nbytes);
// Called by a backend's allocator when its cache grows (delta > 0) or shrinks.
void RecordCachedBytes(const Device& device, int64_t delta);

}  // namespace internal
}  // namespace kindling

#endif  // KINDLING_TENSOR_MEMORY_STATS_H_
