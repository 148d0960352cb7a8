#include "kindling/distributed/gradient_sync.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/reduce_math.h"

namespace kindling::distributed {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t BytesOf(const TensorBase& tensor) {
  return tensor.numel() * static_cast<int64_t>(tensor.element_size());
}

}  // namespace

// SpareCoreForCommunication() is kAuto's choice: whether this process may
// run on more cores than its compute threads and the local ranks' need.
bool SpareCoreForCommunication() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cores = sched_getaffinity(0, sizeof(allowed), &allowed) == 0
                        ? CPU_COUNT(&allowed)
                        : static_cast<int>(std::thread::hardware_concurrency());
  int local_ranks = 1;
  for (const char* name : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && absl::SimpleAtoi(value, &local_ranks)) break;
  }
  return cores > omp_get_max_threads() * std::max(local_ranks, 1);
}

GradientSync::GradientSync(Communicator& comm, GradientSyncOptions options)
    : comm_(comm), options_(options) {
  using Overlap = GradientSyncOptions::Overlap;
  const bool background =
      options_.overlap == Overlap::kBackground ||
      (options_.overlap == Overlap::kAuto && SpareCoreForCommunication());
  if (comm_.world_size() > 1 && background) {
    thread_ = std::thread([this] { ThreadLoop(); });
  }
}

GradientSync::~GradientSync() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::function<void(ParamId, const TensorBase&)> GradientSync::Hook() {
  return [this](ParamId, const TensorBase& grad) { OnGradientReady(grad); };
}

void GradientSync::OnGradientReady(const TensorBase& grad) {
  if (comm_.world_size() == 1) return;
  // A bucket holds one dtype: a gradient of another closes it.
  if (!filling_.grads.empty() &&
      filling_.grads.front().dtype() != grad.dtype()) {
    Enqueue();
  }
  filling_.grads.push_back(grad);
  filling_.bytes += BytesOf(grad);
  if (filling_.bytes >= options_.bucket_bytes) Enqueue();
}

void GradientSync::Enqueue() {
  if (filling_.grads.empty()) return;
  filling_.index = buckets_this_step_++;
  if (!thread_.joinable()) {
    ReduceInline(filling_);
    filling_ = Bucket{};
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
    queue_.push_back(std::move(filling_));
  }
  changed_.notify_all();
  filling_ = Bucket{};
}

void GradientSync::ReduceInline(Bucket& bucket) {
  const Clock::time_point start = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.ok()) error_ = Reduce(bucket);  // after an error, drop the rest
  stats_.buckets += 1;
  stats_.bytes += bucket.bytes;
  const double seconds = SecondsSince(start);
  stats_.communication_seconds += seconds;
  stats_.exposed_seconds += seconds;
}

absl::Status GradientSync::Finish() {
  if (comm_.world_size() == 1) return absl::OkStatus();
  Enqueue();
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return in_flight_ == 0; });
  buckets_this_step_ = 0;
  ++stats_.steps;
  // Inline, ReduceInline() counted the whole reduction as exposed already.
  if (thread_.joinable()) stats_.exposed_seconds += SecondsSince(start);
  return error_;
}

GradientSyncStats GradientSync::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void GradientSync::ThreadLoop() {
  for (;;) {
    Bucket bucket;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      bucket = std::move(queue_.front());
      queue_.pop_front();
    }
    const Clock::time_point start = Clock::now();
    // After an error the rest of the step's buckets are dropped unsent.
    bool failed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failed = !error_.ok();
    }
    const absl::Status status = failed ? absl::OkStatus() : Reduce(bucket);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!status.ok() && error_.ok()) error_ = status;
      stats_.buckets += 1;
      stats_.bytes += bucket.bytes;
      stats_.communication_seconds += SecondsSince(start);
      --in_flight_;
    }
    changed_.notify_all();
  }
}

absl::Status GradientSync::Reduce(Bucket& bucket) {
  for (const TensorBase& grad : bucket.grads) {
    if (grad.device() != comm_.device() || !grad.is_contiguous()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GradientSync: a gradient of shape %s is on %s%s, but the %s "
          "communicator reduces contiguous tensors on %s",
          grad.shape().ToString(), grad.device().ToString(),
          grad.is_contiguous() ? "" : " (not contiguous)", comm_.backend(),
          comm_.device().ToString()));
    }
  }
  const DType dtype = bucket.grads.front().dtype();
  // Every gradient in device memory (NCCL) is reduced where it lies; so is
  // each one on the host at least pack_below_bytes long. The rest are
  // packed, unless only one is left.
  const int64_t pack_below = !comm_.device().is_cpu() ? 0
                             : options_.pack_below_bytes >= 0
                                 ? options_.pack_below_bytes
                                 : comm_.PackBelowBytes();
  std::vector<const TensorBase*> packed;
  int64_t packed_bytes = 0;
  for (const TensorBase& grad : bucket.grads) {
    if (BytesOf(grad) < pack_below) {
      packed.push_back(&grad);
      packed_bytes += BytesOf(grad);
    } else {
      KINDLING_RETURN_IF_ERROR(comm_.AllReduce(grad.data(), grad.numel(), dtype,
                                               ReduceOp::kAverage));
    }
  }
  if (packed.size() == 1) {
    return comm_.AllReduce(packed.front()->data(), packed.front()->numel(),
                           dtype, ReduceOp::kAverage);
  }
  if (packed.empty()) return absl::OkStatus();
  if (static_cast<int>(buffers_.size()) <= bucket.index) {
    buffers_.resize(bucket.index + 1);
  }
  std::vector<uint8_t>& buffer = buffers_[bucket.index];
  buffer.resize(packed_bytes);
  int64_t offset = 0;
  for (const TensorBase* grad : packed) {
    std::memcpy(buffer.data() + offset, grad->data(), BytesOf(*grad));
    offset += BytesOf(*grad);
  }
  // The sum, then the average taken in the copy back: one pass over the
  // buffer fewer than the communicator's own kAverage, with the same
  // arithmetic (reduce_math.h).
  const int64_t element = static_cast<int64_t>(DTypeSize(dtype));
  if (absl::Status status = comm_.AllReduce(
          buffer.data(), packed_bytes / element, dtype, ReduceOp::kSum);
      !status.ok()) {
    return status;
  }
  offset = 0;
  for (const TensorBase* grad : packed) {
    DivideElements(grad->data(), buffer.data() + offset, grad->numel(), dtype,
                   comm_.world_size());
    offset += BytesOf(*grad);
  }
  return absl::OkStatus();
}

}  // namespace kindling::distributed
