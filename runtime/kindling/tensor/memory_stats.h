// MemoryStats: how many tensor bytes each device holds, for tests,
// checkpoint loading and benchmarks.
//
// Every storage a backend allocates for a tensor is counted against its device
// until the last tensor viewing it dies. Memory a tensor merely borrows
// (Storage::Borrow, e.g. a memory-mapped checkpoint) is not counted: it was
// never allocated by Kindling.
//
//   kindling::ResetMemoryStats(kindling::Device::Cpu());
//   {
//     auto t = kindling::Tensor<2>::Zeros({256, 256});
//     kindling::GetMemoryStats(kindling::Device::Cpu()).bytes_live;  // 262144
//   }
//   kindling::GetMemoryStats(kindling::Device::Cpu()).bytes_live;    // 0
//   kindling::GetMemoryStats(kindling::Device::Cpu()).peak_bytes;    // 262144
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
  int64_t bytes_live = 0;
  // The highest bytes_live since the last ResetMemoryStats().
  int64_t peak_bytes = 0;
  // Storages allocated since the last ResetMemoryStats().
  int64_t allocation_count = 0;
};

// GetMemoryStats() reads the counters of `device`.
MemoryStats GetMemoryStats(const Device& device);

// ResetMemoryStats() sets peak_bytes to the current bytes_live and
// allocation_count to zero. bytes_live is never reset: it is a fact, not a
// statistic.
void ResetMemoryStats(const Device& device);

namespace internal {

// Called by Storage when it allocates or frees owned memory.
void RecordAllocation(const Device& device, int64_t nbytes);
void RecordDeallocation(const Device& device, int64_t nbytes);

}  // namespace internal
}  // namespace kindling

#endif  // KINDLING_TENSOR_MEMORY_STATS_H_
