// GradientSync: averages gradients over all ranks while backward still runs
// (data parallelism's one communication per step).
//
//   GradientSync sync(*comm);                     // one per training run
//   BackwardOptions options{.on_gradient_ready = sync.Hook()};
//   Gradients grads = Backward(loss, options);
//   KINDLING_RETURN_IF_ERROR(sync.Finish());      // grads are now averages
//
// Backward hands each leaf's gradient to the hook as soon as it is final.
// The hook packs gradients into buckets (about bucket_bytes each, one dtype
// per bucket, in the order backward produces them, which is the same on
// every rank for the same model). A bucket's small gradients are copied
// into one buffer, all-reduced (sum) and copied back into the gradient
// tensors divided by the world size; its large ones are all-reduced where
// they lie (GradientSyncOptions::pack_below_bytes). With overlap, a
// communication thread does that for each full bucket while backward computes
// the earlier layers' gradients, and Finish() sends the last, partial bucket
// and waits for all; without, Finish() reduces every bucket on the calling
// thread.
//
// Overlap pays only where a core is free for the communication thread. On
// a machine whose cores the ranks' compute threads already fill, handing
// each bucket to another thread and back waits for the scheduler: 2 ranks x
// 1 thread on 2 cores trained the quickstart's epoch in 1.34 s with the
// thread and 1.08 s without (MPI; Gloo took 3.0 s either way). kAuto
// therefore overlaps only when this process may use more cores than its
// compute threads times the ranks on this machine.
//
// Every rank must produce the same gradients in the same order (the same
// model, every parameter used each step); otherwise the ranks' buckets
// differ and the all-reduce fails with an error (or, for equal sizes,
// mixes unrelated gradients: keep the model identical).
//
// Gradient accumulation: run every micro-batch's backward without the
// hook, sum the gradients locally, then pass the sums to OnGradientReady()
// in backward's order and call Finish() once (what the Trainer does with
// accumulation_steps).
#ifndef KINDLING_DISTRIBUTED_GRADIENT_SYNC_H_
#define KINDLING_DISTRIBUTED_GRADIENT_SYNC_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "kindling/core/param_id.h"
#include "kindling/distributed/communicator.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::distributed {

struct GradientSyncOptions {
  // bucket_bytes: a bucket is sent once it holds at least this many bytes.
  int64_t bucket_bytes = int64_t{25} << 20;
  // overlap: kAuto decides as described above, from the cores this process
  // may run on (sched_getaffinity), its OpenMP threads and the local ranks
  // (LOCAL_WORLD_SIZE, or Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; 1 if
  // neither is set).
  enum class Overlap { kAuto, kBackground, kInline };
  Overlap overlap = Overlap::kAuto;
  // pack_below_bytes: in host memory, gradients smaller than this are
  // copied into the bucket's buffer and all-reduced in one call; larger ones
  // are all-reduced where they lie. -1: the engine's choice,
  // Communicator::PackBelowBytes() (MPI 64 KiB, Gloo every gradient).
  int64_t pack_below_bytes = -1;
};

// GradientSyncStats: where a step's communication time went.
struct GradientSyncStats {
  int64_t steps = 0;
  int64_t buckets = 0;
  int64_t bytes = 0;
  // communication_seconds: the thread's time in all-reduces and copies.
  double communication_seconds = 0;
  // exposed_seconds: the time Finish() waited after backward returned; the
  // rest of communication_seconds was hidden behind backward.
  double exposed_seconds = 0;
};

class GradientSync {
 public:
  explicit GradientSync(Communicator& comm, GradientSyncOptions options = {});
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Hook() is the function for BackwardOptions::on_gradient_ready.
  std::function<void(ParamId, const TensorBase&)> Hook();

  // OnGradientReady() adds a gradient to the current bucket (what Hook()
  // calls). The gradient must stay untouched until Finish() returns.
  void OnGradientReady(const TensorBase& grad);

  // Finish() sends the partial bucket and waits for every all-reduce of
  // this step: then every gradient passed in holds the average over ranks.
  // Returns the first error (a gradient on another device than the
  // communicator's, a lost peer), which ends the step.
  [[nodiscard]] absl::Status Finish();

  GradientSyncStats stats() const;

  // overlapping() is whether a communication thread runs (the resolved
  // kAuto).
  bool overlapping() const { return thread_.joinable(); }

 private:
  struct Bucket {
    std::vector<TensorBase> grads;
    int64_t bytes = 0;
    int index = 0;  // its place in the step, to reuse its buffer
  };

  void Enqueue();
  // ReduceInline() reduces a bucket on the calling thread (no overlap).
  void ReduceInline(Bucket& bucket);
  void ThreadLoop();
  absl::Status Reduce(Bucket& bucket);

  Communicator& comm_;
  const GradientSyncOptions options_;
  // The bucket being filled (by backward's thread only).
  Bucket filling_;
  int buckets_this_step_ = 0;
  // One buffer per bucket index, kept across steps (thread only).
  std::vector<std::vector<uint8_t>> buffers_;

  // The queue to the communication thread and what both threads read. A
  // std::mutex rather than absl::Mutex because Debian's Abseil is not built
  // with ThreadSanitizer, which would then miss the happens-before edges.
  mutable std::mutex mutex_;
  // Signalled when a bucket is queued, one is done, or stopping_ is set.
  std::condition_variable changed_;
  std::deque<Bucket> queue_;  // guarded by mutex_
  int in_flight_ = 0;         // guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
  absl::Status error_;        // guarded by mutex_
  GradientSyncStats stats_;   // guarded by mutex_
  std::thread thread_;
};

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_GRADIENT_SYNC_H_
