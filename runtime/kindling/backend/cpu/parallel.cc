#include "kindling/backend/cpu/parallel.h"

#include <immintrin.h>
#include <omp.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kindling::cpu {
namespace {

// kPausePolls: polls of a flag with only a pause in between (about 10 us)
// before a waiting thread starts yielding its core on each poll.
constexpr int kPausePolls = 256;

// kWorkerPollTime: how long an idle worker keeps polling for the next loop
// before it sleeps. Longer than the serial stretches inside a training step
// (a bias add, a LayerNorm: tens of microseconds), far shorter than the time
// between steps of an interactive program.
constexpr std::chrono::microseconds kWorkerPollTime{500};

// True on pool workers, and on a caller while it runs its own loop's tasks:
// a parallel loop started there runs serially.
thread_local bool in_parallel_task = false;

// Job: one parallel loop. Shared by the caller and the workers that picked it
// up, so a worker that wakes after the loop finished still reads a live
// object (and finds no task left to claim).
struct Job {
  void (*task)(void*, int64_t) = nullptr;
  void* context = nullptr;
  int64_t tasks = 0;
  int threads = 1;
  std::atomic<int64_t> next{0};  // the next task to claim
  std::atomic<int64_t> done{0};  // tasks finished
};

// Claims tasks of `job` until none is left.
void Work(Job& job) {
  for (;;) {
    const int64_t task = job.next.fetch_add(1, std::memory_order_relaxed);
    if (task >= job.tasks) return;
    job.task(job.context, task);
    job.done.fetch_add(1, std::memory_order_release);
  }
}

// Polls `ready` until it is true: pause-spins briefly, then yields the core
// on each poll. Gives up, returning false, after `limit` unless `forever`.
template <class Ready>
bool Poll(const Ready& ready, std::chrono::microseconds limit, bool forever) {
  for (int i = 0; i < kPausePolls; ++i) {
    if (ready()) return true;
    _mm_pause();
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    sched_yield();
    if (!forever && i % 16 == 0 &&
        std::chrono::steady_clock::now() > deadline) {
      return ready();
    }
  }
}

class Pool {
 public:
  // Get() is the process's pool. Never destroyed: its workers block in a
  // wait at exit, and joining them from a static destructor could deadlock.
  static Pool& Get() {
    static Pool* const pool = new Pool;
    return *pool;
  }

  void Run(int64_t tasks, int threads, void (*task)(void*, int64_t),
           void* context) {
    std::unique_lock<std::mutex> running(run_mutex_, std::try_to_lock);
    if (!running.owns_lock()) {
      RunSerially(tasks, task, context);
      return;
    }
    StartWorkers(threads - 1);
    auto job = std::make_shared<Job>();
    job->task = task;
    job->context = context;
    job->tasks = tasks;
    job->threads = threads;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
      if (sleepers_ > 0) wake_.notify_all();
    }
    in_parallel_task = true;
    Work(*job);
    in_parallel_task = false;
    // The workers' tasks are at most a few chunks: wait awake.
    Poll([&] { return job->done.load(std::memory_order_acquire) == tasks; }, {},
         /*forever=*/true);
  }

  static void RunSerially(int64_t tasks, void (*task)(void*, int64_t),
                          void* context) {
    const bool nested = in_parallel_task;
    in_parallel_task = true;
    for (int64_t i = 0; i < tasks; ++i) task(context, i);
    in_parallel_task = nested;
  }

 private:
  Pool() = default;

  // Grows the pool to `count` workers. Called with run_mutex_ held.
  void StartWorkers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index] { WorkerLoop(index); });
      workers_.back().detach();
    }
  }

  // Worker `index` takes part in the loops that use more than index + 1
  // threads.
  void WorkerLoop(int index) {
    in_parallel_task = true;
    uint64_t seen = 0;
    for (;;) {
      const auto published = [&] {
        return generation_.load(std::memory_order_acquire) != seen;
      };
      if (!Poll(published, kWorkerPollTime, /*forever=*/false)) {
        std::unique_lock<std::mutex> lock(mutex_);
        ++sleepers_;
        wake_.wait(lock, published);
        --sleepers_;
      }
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job = job_;
        seen = generation_.load(std::memory_order_relaxed);
      }
      if (index < job->threads - 1) Work(*job);
    }
  }

  std::mutex run_mutex_;  // held by the caller of the loop on the pool
  std::vector<std::thread> workers_;  // detached; only grows, under run_mutex_

  std::mutex mutex_;  // guards job_ and sleepers_, pairs with wake_
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  int sleepers_ = 0;
  // Bumped (under mutex_) each time job_ is replaced; polled without the
  // lock by idle workers.
  std::atomic<uint64_t> generation_{0};
};

}  // namespace

int MaxThreads() { return omp_get_max_threads(); }

namespace internal {

void RunTasks(int64_t tasks, int threads, void (*task)(void*, int64_t),
              void* context) {
  if (tasks <= 0) return;
  if (threads <= 1 || tasks == 1 || in_parallel_task) {
    Pool::RunSerially(tasks, task, context);
    return;
  }
  Pool::Get().Run(tasks, threads, task, context);
}

}  // namespace internal
}  // namespace kindling::cpu
