// FakeDeviceApi: a DeviceApi over host memory whose streams and events the
// test drives by hand, to test the caching allocator on a CPU.
//
// Streams are just distinct handles (the test makes them with Stream(n)).
// Work "queued" on a stream is finished only when the test says so with
// FinishStream(); an event recorded on a stream completes when that stream
// is finished after the record. Malloc fails with ResourceExhausted beyond a
// capacity, like a full GPU. Every call is counted so tests can assert what
// the allocator asked of the device. Every method may be called from any
// thread (one mutex), so a test thread may finish streams while others
// allocate.
#ifndef KINDLING_TESTS_BACKEND_CUDA_FAKE_DEVICE_API_H_
#define KINDLING_TESTS_BACKEND_CUDA_FAKE_DEVICE_API_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kindling/backend/cuda/device_api.h"
#include "kindling/core/check.h"

namespace kindling::cuda::testing {

class FakeDeviceApi final : public DeviceApi {
 public:
  explicit FakeDeviceApi(size_t capacity_bytes) : capacity_(capacity_bytes) {}
  ~FakeDeviceApi() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [data, size] : live_) std::free(data);
  }

  // StreamHandle() is the handle of stream `n` (n >= 1; handles are never
  // dereferenced).
  static Stream StreamHandle(int n) {
    return reinterpret_cast<Stream>(static_cast<uintptr_t>(n) * 16);
  }

  absl::StatusOr<void*> Malloc(size_t nbytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++mallocs_;
    if (used_ + nbytes > capacity_) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("fake device: %d bytes free", capacity_ - used_));
    }
    void* data = std::malloc(nbytes);
    KINDLING_CHECK(data != nullptr, "fake device: host malloc failed");
    used_ += nbytes;
    live_[data] = nbytes;
    return data;
  }

  void Free(void* data) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(data);
    KINDLING_CHECK(it != live_.end(), "fake device: free of unknown %p", data);
    used_ -= it->second;
    std::free(data);
    live_.erase(it);
    ++frees_;
  }

  Event CreateEvent() override {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::make_unique<FakeEvent>());
    return events_.back().get();
  }

  void RecordEvent(Event event, Stream stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    FakeEvent& fake = *static_cast<FakeEvent*>(event);
    fake.stream = stream;
    fake.recorded_at = ++finish_point_[stream].queued;
    ++records_;
  }

  bool EventCompleted(Event event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const FakeEvent& fake = *static_cast<FakeEvent*>(event);
    return fake.stream == nullptr ||
           finish_point_[fake.stream].finished >= fake.recorded_at;
  }

  void StreamWaitEvent(Stream stream, Event event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    waits_.push_back({stream, static_cast<FakeEvent*>(event)->stream});
  }

  void Synchronize() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [stream, points] : finish_point_)
      points.finished = points.queued;
    ++synchronizes_;
  }

  // FinishStream() makes everything queued on `stream` so far complete.
  void FinishStream(Stream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    finish_point_[stream].finished = finish_point_[stream].queued;
  }

  size_t used_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return used_;
  }
  int mallocs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return mallocs_;
  }
  int frees() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return frees_;
  }
  int records() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return records_;
  }
  int synchronizes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return synchronizes_;
  }
  // Each wait as (waiting stream, stream the event was recorded on).
  std::vector<std::pair<Stream, Stream>> waits() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waits_;
  }

 private:
  struct FakeEvent {
    Stream stream = nullptr;
    int64_t recorded_at = 0;
  };
  struct Points {
    int64_t queued = 0;
    int64_t finished = 0;
  };

  const size_t capacity_;
  // Guards every member below it.
  mutable std::mutex mutex_;
  size_t used_ = 0;
  absl::flat_hash_map<void*, size_t> live_;
  std::vector<std::unique_ptr<FakeEvent>> events_;
  absl::flat_hash_map<Stream, Points> finish_point_;
  std::vector<std::pair<Stream, Stream>> waits_;
  int mallocs_ = 0;
  int frees_ = 0;
  int records_ = 0;
  int synchronizes_ = 0;
};

}  // namespace kindling::cuda::testing

#endif  // KINDLING_TESTS_BACKEND_CUDA_FAKE_DEVICE_API_H_
