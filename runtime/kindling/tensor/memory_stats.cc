#include "kindling/tensor/memory_stats.h"

#include <array>
#include <atomic>

#include "kindling/core/check.h"

namespace kindling {
namespace {

// One slot per device: the CPU, then cuda:0 .. cuda:kMaxCudaDevices-1.
constexpr int kMaxCudaDevices = 64;

struct Counters {
  std::atomic<int64_t> bytes_live{0};
  std::atomic<int64_t> peak_bytes{0};
  std::atomic<int64_t> allocation_count{0};
};

Counters& CountersFor(const Device& device) {
  static std::array<Counters, 1 + kMaxCudaDevices> counters;
  if (device.is_cpu()) return counters[0];
  KINDLING_CHECK(device.index() >= 0 && device.index() < kMaxCudaDevices,
                 "memory stats: device %s out of range", device.ToString());
  return counters[1 + device.index()];
}

}  // namespace

MemoryStats GetMemoryStats(const Device& device) {
  const Counters& counters = CountersFor(device);
  MemoryStats stats;
  stats.bytes_live = counters.bytes_live.load(std::memory_order_relaxed);
  stats.peak_bytes = counters.peak_bytes.load(std::memory_order_relaxed);
  stats.allocation_count =
      counters.allocation_count.load(std::memory_order_relaxed);
  return stats;
}

void ResetMemoryStats(const Device& device) {
  Counters& counters = CountersFor(device);
  counters.peak_bytes.store(counters.bytes_live.load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
  counters.allocation_count.store(0, std::memory_order_relaxed);
}

namespace internal {

void RecordAllocation(const Device& device, int64_t nbytes) {
  Counters& counters = CountersFor(device);
  counters.allocation_count.fetch_add(1, std::memory_order_relaxed);
  const int64_t live =
      counters.bytes_live.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  int64_t peak = counters.peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !counters.peak_bytes.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed)) {
  }
}

void RecordDeallocation(const Device& device, int64_t nbytes) {
  CountersFor(device).bytes_live.fetch_sub(nbytes, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace kindling
