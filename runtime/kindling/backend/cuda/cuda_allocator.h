// CudaAllocator: a caching, stream-ordered allocator for one CUDA device.
//
// cudaMalloc is slow and cudaFree synchronizes the whole device, so a
// training step that allocated and freed its activations through them would
// stall the GPU on every free. CudaAllocator keeps freed blocks and hands
// them to later requests; after the first step a training loop never calls
// cudaMalloc or cudaFree. It talks to the device only through DeviceApi
// (device_api.h), so the logic below is tested on a CPU with a fake device.
//
// Size classes. A request is rounded up to a block size: a multiple of
// 512 bytes below 1 MiB, else a power of two or 1.25, 1.5 or 1.75 times one
// (four classes per doubling), so a block wastes under a quarter of a large
// request. A request takes the smallest free block of its class or larger
// that is at most a quarter bigger (small blocks: its class exactly).
//
// Stream-ordered reuse. Every block belongs to the stream it was allocated
// on, where the kernels using it run in order. Freeing it is immediate on
// the host even while kernels still use it: a later request on the same
// stream can take it at once, because its new kernels queue after the old
// ones. A request on another stream takes it only through an event: the
// allocator records an event on the block's stream and makes the new stream
// wait for it (on the device; the host never blocks). A block that kernels
// on other streams also used (RecordStream()) is held back, when freed,
// until events recorded on those streams have completed.
//
// Out of memory. When the device cannot satisfy a cache miss, the
// allocator synchronizes, frees every cached block and retries once; if
// that fails too, Allocate() returns ResourceExhausted naming the request
// and the allocated, reserved and cached bytes. EmptyCache() does the same
// on request (between phases of a program).
//
// Accounting: allocated_bytes are blocks handed out (whole blocks), reserved
// bytes everything obtained from the device, cached the difference (free
// and held-back blocks). An allocator constructed with
// Options::stats_device reports its cached bytes to that device's
// MemoryStats, like the CPU allocator.
//
//   CudaAllocator allocator(&device_api, {});
//   void* a = *allocator.Allocate(3 << 20, stream);  // device: 3 MiB block
//   allocator.Deallocate(a);                          // cached on `stream`
//   void* b = *allocator.Allocate(3 << 20, stream);  // the same block
//
// Thread safety: every member may be called from any thread; one mutex
// guards the bookkeeping (a std::mutex, which ThreadSanitizer sees, unlike
// Debian's uninstrumented absl::Mutex). Device calls happen under it.
#ifndef KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_
#define KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "kindling/backend/cuda/device_api.h"
#include "kindling/tensor/device.h"

namespace kindling::cuda {

// CudaAllocatorStats is a snapshot of one allocator's counters.
struct CudaAllocatorStats {
  // Bytes of blocks handed out and not yet freed (whole blocks).
  size_t allocated_bytes = 0;
  // Bytes obtained from the device and not given back.
  size_t reserved_bytes = 0;
  // reserved_bytes - allocated_bytes: free and held-back blocks.
  size_t cached_bytes = 0;
  // Blocks freed but held back until other streams' events complete.
  size_t pending_blocks = 0;
  // Device calls: Malloc() and Free().
  int64_t device_mallocs = 0;
  int64_t device_frees = 0;
  // Requests served from the cache, and how many of them took a block from
  // another stream (through an event).
  int64_t cache_hits = 0;
  int64_t cross_stream_reuses = 0;
  // Times a failed Malloc() emptied the cache and retried.
  int64_t out_of_memory_retries = 0;
};

class CudaAllocator {
 public:
  using Stream = DeviceApi::Stream;

  static constexpr size_t kSmallBlockGranularity = 512;
  // Below this a request rounds to a multiple of kSmallBlockGranularity.
  static constexpr size_t kLargeBlockBytes = size_t{1} << 20;

  struct Options {
    // Where to report cached bytes in MemoryStats; none for a private
    // allocator (tests) whose blocks no Storage counts.
    std::optional<Device> stats_device;
    // Names the device in error messages ("cuda:0").
    std::string device_name = "device";
  };

  // `device` must outlive the allocator.
  CudaAllocator(DeviceApi* device, Options options);
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;
  // Gives the cache back to the device.
  // REQUIRES: every block has been deallocated (checked).
  ~CudaAllocator();

  // Allocate() returns a block of at least `nbytes` (nullptr for 0) for use
  // on `stream`; ResourceExhausted, naming the request and the allocator's
  // bytes, when the device is out of memory even after emptying the cache.
  [[nodiscard]] absl::StatusOr<void*> Allocate(size_t nbytes, Stream stream);

  // Deallocate() frees a block from Allocate() (nullptr is ignored). It may
  // still be in use by queued kernels: see "Stream-ordered reuse".
  void Deallocate(void* data);

  // RecordStream() notes that kernels on `stream` use the live block `data`
  // (which was allocated on another stream): when freed, it is not reused
  // until the work queued on `stream` by then has finished.
  void RecordStream(void* data, Stream stream);

  // EmptyCache() synchronizes the device, then gives every cached block back
  // to it; returns the bytes given back.
  size_t EmptyCache();

  CudaAllocatorStats stats() const;

  // SizeClass() is the block size a request of `nbytes` > 0 is rounded to.
  static size_t SizeClass(size_t nbytes);

 private:
  using Event = DeviceApi::Event;

  enum class State { kLive, kFree, kHeldBack };
  struct Block {
    State state = State::kLive;
    size_t size = 0;
    // The stream it was allocated on (and is cached on once free).
    Stream stream = nullptr;
    // Other streams that used it (RecordStream()).
    std::vector<Stream> other_streams;
    // While held back after a free: events on other_streams.
    std::vector<Event> pending_events;
  };
  // Free blocks by (stream, size, address): best fit on one stream. Handles
  // are keyed as integers, which order totally (unrelated pointers don't).
  using StreamKey = std::tuple<uintptr_t, size_t, uintptr_t>;
  // Free blocks by (size, stream, address): best fit on any stream.
  using SizeKey = std::tuple<size_t, uintptr_t, uintptr_t>;

  // The REQUIRES: mutex_ held for every helper below.
  // TakeFreeBlock() removes and returns the best free block for `size` on
  // `stream`, else from another stream (making `stream` wait for it), else
  // nullptr.
  void* TakeFreeBlock(size_t size, Stream stream);
  void InsertFree(void* data, const Block& block);
  void EraseFree(void* data, const Block& block);
  // ReleasePendingBlocks() frees the held-back blocks whose events have all
  // completed.
  void ReleasePendingBlocks();
  // FreeCachedBlocks() synchronizes and gives every cached block back.
  size_t FreeCachedBlocks();
  Event TakeEvent();
  absl::Status OutOfMemory(size_t nbytes, size_t size,
                           const absl::Status& cause) const;
  void ReportCachedBytes(int64_t delta) const;

  DeviceApi* const device_;
  const Options options_;
  // Guards every member below it.
  mutable std::mutex mutex_;
  absl::flat_hash_map<void*, Block> blocks_;
  std::set<StreamKey> free_by_stream_;
  std::set<SizeKey> free_by_size_;
  std::vector<void*> pending_;
  std::vector<Event> idle_events_;
  CudaAllocatorStats stats_;
};

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_
