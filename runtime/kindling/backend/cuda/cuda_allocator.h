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
// wait for it (on the device; the host never blocks).
//
// Uses on other streams. Freeing at once is safe only for work on the
// block's own stream. When work on another stream S reads or writes the
// block (a thread switched its current stream, cuda_context.h), freeing it
// must not let its own stream take it while that work may still run: the
// caller says so with RecordStream(data, S) before or after enqueueing it,
// any time before the free. A block recorded on other streams is held back
// when freed: the allocator records an event on each of them, and only once
// all have completed does the block become free (on its own stream again).
// The CUDA runtime records every block it enqueues work on, at two choke
// points: CudaBackend's per-call setup (every operand of every kernel and
// cuBLAS call) and CudaDeviceMemory's copies. `data` may point anywhere
// inside a block (a view's first element): the allocator maps it to its
// block through an ordered index of block addresses.
//
// Who pays for recording. A program that runs everything on one stream
// records nothing: RecordStream() first compares `stream` with the stream of
// the allocator's first Allocate() and reads a "several streams" flag that
// the first Allocate() on another stream sets, both relaxed atomic loads;
// when nothing but that one stream was ever used every block belongs to it,
// so the record is a no-op and returns without the lock or a lookup. Only
// records on a second stream (or once one has allocated) take the mutex and
// look the block up: a hash lookup for a block's own address, a binary
// search for an interior one.
//
// Out of memory. When the device cannot satisfy a cache miss, the
// allocator synchronizes, frees every cached block and retries once; if
// that fails too, Allocate() returns ResourceExhausted naming the request
// and the allocated, reserved and cached bytes. EmptyCache() does the same
// on request (between phases of a program).
//
// Accounting: live_bytes are blocks handed out (whole blocks), reserved
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
// RecordStream()'s lock-free no-op is sound with relaxed loads: both values
// only ever move one way (the first stream is written once, the flag only
// goes from false to true, both under the mutex), and a block belongs to a
// stream other than the first only after an Allocate() on that stream, which
// set the flag before returning the block. A caller naming the block got its
// address from that Allocate(), so it is ordered after the store and sees it.
#ifndef KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_
#define KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_

#include <atomic>
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
  size_t live_bytes = 0;
  // Bytes obtained from the device and not given back.
  size_t reserved_bytes = 0;
  // reserved_bytes - live_bytes: free and held-back blocks.
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

  // RecordStream() notes that work queued on `stream` reads or writes the
  // live block holding `data` (its address or any byte inside it): when the
  // block is freed, it is not reused, on any stream, until the work queued on
  // `stream` by then has finished. A no-op when `stream` is the block's own
  // stream, and for an address in no block of this allocator (borrowed
  // memory, whose owner orders its reuse; nullptr). Lock-free when only one
  // stream has been used (see "Who pays for recording").
  // REQUIRES: `stream` stays valid until the block is freed (the free records
  // an event on it). REQUIRES: the block is not free; a record that is not a
  // no-op aborts naming the address.
  //
  //   void* data = *allocator.Allocate(nbytes, default_stream);
  //   Launch(side_stream, data);                   // a read on another stream
  //   allocator.RecordStream(data, side_stream);
  //   allocator.Deallocate(data);  // held back until side_stream gets there
  void RecordStream(const void* data, Stream stream) {
    if (stream == first_stream_.load(std::memory_order_relaxed) &&
        !several_streams_.load(std::memory_order_relaxed)) {
      return;  // every block belongs to `stream`
    }
    RecordStreamSlow(data, stream);
  }

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

  // RecordStreamSlow() is RecordStream() past its lock-free check: takes the
  // mutex.
  void RecordStreamSlow(const void* data, Stream stream);

  // The REQUIRES: mutex_ held for every helper below.
  // FindBlock() returns the block holding `data` and sets `*base` to its
  // address, or returns nullptr when no block holds it.
  Block* FindBlock(const void* data, void** base);
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
  // RecordStream()'s lock-free check reads these two without the mutex (see
  // "Thread safety" above); Allocate() writes them under it. The stream of
  // the first Allocate() (nullptr before it), and whether any Allocate() has
  // been on another stream since.
  std::atomic<Stream> first_stream_{nullptr};
  std::atomic<bool> several_streams_{false};
  // Guards every member below it.
  mutable std::mutex mutex_;
  // Whether first_stream_ has been set (nullptr may be a real stream).
  bool has_first_stream_ = false;
  // Every block obtained from the device, by address.
  absl::flat_hash_map<void*, Block> blocks_;
  // The same addresses in order, to find the block holding an interior
  // pointer (RecordStream()); changes only on device Malloc() and Free().
  std::set<uintptr_t> block_addresses_;
  std::set<StreamKey> free_by_stream_;
  std::set<SizeKey> free_by_size_;
  std::vector<void*> pending_;
  std::vector<Event> idle_events_;
  CudaAllocatorStats stats_;
};

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_CUDA_ALLOCATOR_H_
