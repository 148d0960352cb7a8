#include "kindling/backend/cuda/cuda_allocator.h"

#include <bit>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "kindling/core/check.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling::cuda {
namespace {

// Requests above this are refused before rounding (no device has 4 EiB).
constexpr size_t kMaxRequestBytes = size_t{1} << 62;

uintptr_t Key(const void* handle) {
  return reinterpret_cast<uintptr_t>(handle);
}

// MaxReuseSize() is the largest free block a request of class `size` may
// take: the class itself for small blocks, a quarter more for large ones.
size_t MaxReuseSize(size_t size) {
  return size < CudaAllocator::kLargeBlockBytes ? size : size + size / 4;
}

}  // namespace

size_t CudaAllocator::SizeClass(size_t nbytes) {
  KINDLING_CHECK(nbytes > 0 && nbytes <= kMaxRequestBytes,
                 "cuda allocator: size class of %d bytes", nbytes);
  if (nbytes < kLargeBlockBytes) {
    return (nbytes + kSmallBlockGranularity - 1) / kSmallBlockGranularity *
           kSmallBlockGranularity;
  }
  // Four classes per doubling: multiples of a quarter of the power below.
  const size_t step = std::bit_floor(nbytes) / 4;
  return (nbytes + step - 1) / step * step;
}

CudaAllocator::CudaAllocator(DeviceApi* device, Options options)
    : device_(device), options_(std::move(options)) {
  KINDLING_CHECK(device_ != nullptr, "cuda allocator: null DeviceApi");
}

CudaAllocator::~CudaAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  KINDLING_CHECK(stats_.live_bytes == 0,
                 "cuda allocator for %s destroyed with %d bytes allocated",
                 options_.device_name, stats_.live_bytes);
  FreeCachedBlocks();
}

absl::StatusOr<void*> CudaAllocator::Allocate(size_t nbytes, Stream stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (nbytes > kMaxRequestBytes) {
    return OutOfMemory(nbytes, nbytes,
                       absl::ResourceExhaustedError("larger than any device"));
  }
  if (!has_first_stream_) {
    has_first_stream_ = true;
    first_stream_.store(stream, std::memory_order_relaxed);
  } else if (stream != first_stream_.load(std::memory_order_relaxed)) {
    // From now on RecordStream() looks every block up (see the header).
    several_streams_.store(true, std::memory_order_relaxed);
  }
  const size_t size = SizeClass(nbytes);
  ReleasePendingBlocks();
  if (void* data = TakeFreeBlock(size, stream); data != nullptr) {
    const size_t block_size = blocks_.at(data).size;
    stats_.live_bytes += block_size;
    ++stats_.cache_hits;
    ReportCachedBytes(-static_cast<int64_t>(block_size));
    return data;
  }
  absl::StatusOr<void*> data = device_->Malloc(size);
  if (!data.ok() && absl::IsResourceExhausted(data.status())) {
    // Cached blocks of other classes may add up to what is needed.
    ++stats_.out_of_memory_retries;
    FreeCachedBlocks();
    data = device_->Malloc(size);
    if (!data.ok() && absl::IsResourceExhausted(data.status())) {
      return OutOfMemory(nbytes, size, data.status());
    }
  }
  if (!data.ok()) {
    return absl::Status(
        data.status().code(),
        absl::StrFormat("%s: allocating %d bytes: %s", options_.device_name,
                        nbytes, data.status().message()));
  }
  block_addresses_.insert(Key(*data));
  Block& block = blocks_[*data];
  block.state = State::kLive;
  block.size = size;
  block.stream = stream;
  stats_.reserved_bytes += size;
  stats_.live_bytes += size;
  ++stats_.device_mallocs;
  return *data;
}

void CudaAllocator::Deallocate(void* data) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(data);
  KINDLING_CHECK(it != blocks_.end() && it->second.state == State::kLive,
                 "cuda allocator for %s: deallocating %p, which is not a live "
                 "block (double free, or not from this allocator)",
                 options_.device_name, data);
  Block& block = it->second;
  stats_.live_bytes -= block.size;
  ReportCachedBytes(static_cast<int64_t>(block.size));
  if (block.other_streams.empty()) {
    block.state = State::kFree;
    InsertFree(data, block);
    return;
  }
  // Kernels on other streams may still read or write it: hold it back until
  // everything queued there so far has run.
  for (Stream other : block.other_streams) {
    Event event = TakeEvent();
    device_->RecordEvent(event, other);
    block.pending_events.push_back(event);
  }
  block.other_streams.clear();
  block.state = State::kHeldBack;
  pending_.push_back(data);
}

void CudaAllocator::RecordStreamSlow(const void* data, Stream stream) {
  if (data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  void* base = nullptr;
  Block* found = FindBlock(data, &base);
  if (found == nullptr) return;  // not this allocator's memory
  Block& block = *found;
  KINDLING_CHECK(block.state == State::kLive,
                 "cuda allocator for %s: RecordStream on %p, inside the block "
                 "%p, which is not live (used after it was freed)",
                 options_.device_name, data, base);
  if (stream == block.stream) return;
  for (Stream other : block.other_streams) {
    if (other == stream) return;
  }
  block.other_streams.push_back(stream);
}

size_t CudaAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  return FreeCachedBlocks();
}

CudaAllocatorStats CudaAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CudaAllocatorStats stats = stats_;
  stats.cached_bytes = stats.reserved_bytes - stats.live_bytes;
  stats.pending_blocks = pending_.size();
  return stats;
}

CudaAllocator::Block* CudaAllocator::FindBlock(const void* data, void** base) {
  // A block's own address (a whole Storage) needs no ordered search.
  if (auto it = blocks_.find(const_cast<void*>(data)); it != blocks_.end()) {
    *base = it->first;
    return &it->second;
  }
  // An interior address: the block that starts last at or before it, if it
  // reaches that far.
  auto after = block_addresses_.upper_bound(Key(data));
  if (after == block_addresses_.begin()) return nullptr;
  void* start = reinterpret_cast<void*>(*std::prev(after));
  Block& block = blocks_.at(start);
  if (Key(data) - Key(start) >= block.size) return nullptr;
  *base = start;
  return &block;
}

void* CudaAllocator::TakeFreeBlock(size_t size, Stream stream) {
  const size_t max_size = MaxReuseSize(size);
  // Same stream: ordered after the block's last use, no event needed.
  auto same = free_by_stream_.lower_bound({Key(stream), size, 0});
  if (same != free_by_stream_.end() && std::get<0>(*same) == Key(stream) &&
      std::get<1>(*same) <= max_size) {
    void* data = reinterpret_cast<void*>(std::get<2>(*same));
    Block& block = blocks_.at(data);
    EraseFree(data, block);
    block.state = State::kLive;
    return data;
  }
  // Another stream: the smallest fitting block (none is on `stream`, or the
  // lookup above would have found it). `stream` waits, on the device, for
  // everything queued on the block's stream so far, its last use included.
  auto any = free_by_size_.lower_bound({size, 0, 0});
  if (any == free_by_size_.end() || std::get<0>(*any) > max_size) {
    return nullptr;
  }
  void* data = reinterpret_cast<void*>(std::get<2>(*any));
  Block& block = blocks_.at(data);
  EraseFree(data, block);
  Event event = TakeEvent();
  device_->RecordEvent(event, block.stream);
  device_->StreamWaitEvent(stream, event);
  // The wait captured the event's state: it may be recorded again at once.
  idle_events_.push_back(event);
  block.stream = stream;
  block.state = State::kLive;
  ++stats_.cross_stream_reuses;
  return data;
}

void CudaAllocator::InsertFree(void* data, const Block& block) {
  free_by_stream_.insert({Key(block.stream), block.size, Key(data)});
  free_by_size_.insert({block.size, Key(block.stream), Key(data)});
}

void CudaAllocator::EraseFree(void* data, const Block& block) {
  free_by_stream_.erase({Key(block.stream), block.size, Key(data)});
  free_by_size_.erase({block.size, Key(block.stream), Key(data)});
}

void CudaAllocator::ReleasePendingBlocks() {
  for (size_t i = 0; i < pending_.size();) {
    void* data = pending_[i];
    Block& block = blocks_.at(data);
    bool done = true;
    for (Event event : block.pending_events) {
      done = done && device_->EventCompleted(event);
    }
    if (!done) {
      ++i;
      continue;
    }
    for (Event event : block.pending_events) idle_events_.push_back(event);
    block.pending_events.clear();
    block.state = State::kFree;
    InsertFree(data, block);
    pending_[i] = pending_.back();
    pending_.pop_back();
  }
}

size_t CudaAllocator::FreeCachedBlocks() {
  // Queued kernels may still use free blocks; after this nothing does.
  device_->Synchronize();
  ReleasePendingBlocks();
  size_t freed = 0;
  for (const SizeKey& key : free_by_size_) {
    void* data = reinterpret_cast<void*>(std::get<2>(key));
    device_->Free(data);
    freed += std::get<0>(key);
    ++stats_.device_frees;
    blocks_.erase(data);
    block_addresses_.erase(Key(data));
  }
  free_by_size_.clear();
  free_by_stream_.clear();
  stats_.reserved_bytes -= freed;
  ReportCachedBytes(-static_cast<int64_t>(freed));
  return freed;
}

DeviceApi::Event CudaAllocator::TakeEvent() {
  if (idle_events_.empty()) return device_->CreateEvent();
  Event event = idle_events_.back();
  idle_events_.pop_back();
  return event;
}

absl::Status CudaAllocator::OutOfMemory(size_t nbytes, size_t size,
                                        const absl::Status& cause) const {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s out of memory: cannot allocate %d bytes (a %d-byte block); "
      "allocated %d bytes, reserved %d bytes, cached %d bytes after "
      "emptying the cache and retrying (%s)",
      options_.device_name, nbytes, size, stats_.live_bytes,
      stats_.reserved_bytes, stats_.reserved_bytes - stats_.live_bytes,
      cause.message()));
}

void CudaAllocator::ReportCachedBytes(int64_t delta) const {
  if (options_.stats_device.has_value() && delta != 0) {
    internal::RecordCachedBytes(*options_.stats_device, delta);
  }
}

}  // namespace kindling::cuda
