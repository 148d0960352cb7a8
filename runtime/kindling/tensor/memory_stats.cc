#include "kindling/tensor/memory_stats.h"

#include <array>
#include <atomic>

#include "kindling/core/check.h"

namespace kindling {
namespace {

// One slot per device: the CPU, then cuda:0 .. cuda:kMaxCudaDevices-1.
constexpr int kMaxCudaDevices = 64;

struct Counters {
  std::atomic<int64_t> live_bytes{0};
  std::atomic<int64_t> peak_live_bytes{0};
  std::atomic<int64_t> allocation_count{0};
  std::atomic<int64_t> cached_bytes{0};
  // live_bytes + cached_bytes, kept in one counter so that its peak is taken
  // from one atomic update.
  std::atomic<int64_t> reserved_bytes{0};
  std::atomic<int64_t> peak_reserved_bytes{0};
};

// Raises `peak` to `value` unless another thread raised it further.
void RaisePeak(std::atomic<int64_t>& peak, int64_t value) {
  int64_t current = peak.load(std::memory_order_relaxed);
  while (value > current && !peak.compare_exchange_weak(
                                current, value, std::memory_order_relaxed)) {
  }
}

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
  stats.live_bytes = counters.live_bytes.load(std::memory_order_relaxed);
  stats.peak_live_bytes =
      counters.peak_live_bytes.load(std::memory_order_relaxed);
  stats.allocation_count =
      counters.allocation_count.load(std::memory_order_relaxed);
  stats.cached_bytes = counters.cached_bytes.load(std::memory_order_relaxed);
  stats.reserved_bytes = stats.live_bytes + stats.cached_bytes;
  stats.peak_reserved_bytes =
      counters.peak_reserved_bytes.load(std::memory_order_relaxed);
  return stats;
}

void ResetMemoryStats(const Device& device) {
  Counters& counters = CountersFor(device);
  counters.peak_live_bytes.store(
      counters.live_bytes.load(std::memory_order_relaxed),
      std::memory_order_relaxed);
  counters.peak_reserved_bytes.store(
      counters.reserved_bytes.load(std::memory_order_relaxed),
      std::memory_order_relaxed);
  counters.allocation_count.store(0, std::memory_order_relaxed);
}

namespace internal {

void RecordAllocation(const Device& device, int64_t nbytes) {
  Counters& counters = CountersFor(device);
  counters.allocation_count.fetch_add(1, std::memory_order_relaxed);
  const int64_t live =
      counters.live_bytes.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  RaisePeak(counters.peak_live_bytes, live);
  const int64_t reserved =
      counters.reserved_bytes.fetch_add(nbytes, std::memory_order_relaxed) +
      nbytes;
  RaisePeak(counters.peak_reserved_bytes, reserved);
}

void RecordDeallocation(const Device& device, int64_t nbytes) {
  Counters& counters = CountersFor(device);
  counters.live_bytes.fetch_sub(nbytes, std::memory_order_relaxed);
  // The allocator may have cached the block just before: the peak is taken
  // now, once the bytes have moved from live to cached, so that the moment
  // they count twice never shows.
  const int64_t reserved =
      counters.reserved_bytes.fetch_sub(nbytes, std::memory_order_relaxed) -
      nbytes;
  RaisePeak(counters.peak_reserved_bytes, reserved);
}

void RecordCachedBytes(const Device& device, int64_t delta) {
  Counters& counters = CountersFor(device);
  counters.cached_bytes.fetch_add(delta, std::memory_order_relaxed);
  counters.reserved_bytes.fetch_add(delta, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace kindling
