// ParallelFor and ParallelSlabs: split a kernel's loop over the CPU threads.
//
// Kernels call ParallelFor(total, grain, body) with body(begin, end) over
// disjoint ranges covering [0, total). Work below 2 * grain items runs
// serially on the calling thread without touching the thread pool, so tiny
// ops (a bias of 16 floats) cost no thread wake-up; larger work is cut into
// contiguous chunks of at least `grain` items, a few per thread.
// ParallelSlabs(slabs, body) runs body(slab) for work already cut to the
// thread count (the row slabs of a GEMM). Nested calls (a kernel invoked
// from inside a parallel body) run serially.
//
// The threads. MaxThreads() threads work on a loop: the caller and
// MaxThreads() - 1 workers of one process-wide pool. Chunks are claimed from
// an atomic counter and the caller claims too, so a loop never waits for a
// worker to wake up: on a busy machine, where a worker may not get a core for
// milliseconds, the caller simply does the chunks itself. Workers that finish
// a loop keep polling for the next one for a short while (yielding the core
// to any other runnable thread while they do), then sleep on a condition
// variable. A training step issues a parallel loop every few tens of
// microseconds, so the workers stay awake through a step without burning a
// core between steps, and without OpenMP's default busy wait, which on a
// 2-core machine took the cores OpenBLAS's and the data loader's threads
// needed.
//
// The thread count is OpenMP's (omp_get_max_threads(): OMP_NUM_THREADS, or
// omp_set_num_threads() through kindling::train::SetCpuThreads), so existing
// settings keep working; OpenMP's own runtime runs no kernel. One loop runs
// on the pool at a time: a second thread that starts a loop while the pool is
// busy (two forked workers training at once) runs its loop serially.
#ifndef KINDLING_BACKEND_CPU_PARALLEL_H_
#define KINDLING_BACKEND_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>

namespace kindling::cpu {

// kElementGrain is the fewest elements of a memory-bound loop worth giving to
// one more thread: below it the hand-off (a few microseconds) costs more
// than the work.
inline constexpr int64_t kElementGrain = int64_t{1} << 16;

// kHeavyElementGrain is kElementGrain for loops whose elements each cost
// several times an addition's time (a square root and a division per
// element, a normalized row's passes): a quarter of it. The kernels that
// use it say what it measured there.
inline constexpr int64_t kHeavyElementGrain = kElementGrain / 4;

// kTranscendentalGrain is kElementGrain for loops that evaluate an
// exponential, logarithm, tanh or the like per element (tens of
// instructions, not a load and a store): an eighth of it.
inline constexpr int64_t kTranscendentalGrain = kElementGrain / 8;

// kChunksPerThread: work is cut into this many chunks per thread and handed
// out dynamically, so a thread that loses its core (a busy machine, a
// hyperthread sibling) delays the op by one chunk, not by half of it.
inline constexpr int64_t kChunksPerThread = 8;

// MaxThreads() is how many threads a parallel loop may use, the caller
// included.
int MaxThreads();

namespace internal {

// RunTasks() calls task(context, i) for every i in [0, tasks), on up to
// `threads` threads (the caller among them), and returns when all are done.
// Runs them all on the caller when `threads` <= 1, when called from inside a
// task, or when another thread's loop holds the pool.
void RunTasks(int64_t tasks, int threads, void (*task)(void*, int64_t),
              void* context);

}  // namespace internal

template <class Body>
void ParallelFor(int64_t total, int64_t grain, const Body& body) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t threads = std::min<int64_t>(MaxThreads(), total / grain);
  if (threads <= 1) {
    body(int64_t{0}, total);
    return;
  }
  struct Loop {
    const Body& body;
    int64_t total;
    int64_t chunks;
  } loop{body, total, std::min(total / grain, threads * kChunksPerThread)};
  internal::RunTasks(
      loop.chunks, static_cast<int>(threads),
      [](void* context, int64_t chunk) {
        const Loop& loop = *static_cast<const Loop*>(context);
        loop.body(loop.total * chunk / loop.chunks,
                  loop.total * (chunk + 1) / loop.chunks);
      },
      &loop);
}

template <class Body>
void ParallelSlabs(int64_t slabs, const Body& body) {
  if (slabs <= 0) return;
  const int64_t threads = std::min<int64_t>(MaxThreads(), slabs);
  if (threads <= 1) {
    for (int64_t slab = 0; slab < slabs; ++slab) body(slab);
    return;
  }
  internal::RunTasks(
      slabs, static_cast<int>(threads),
      [](void* context, int64_t slab) {
        (*static_cast<const Body*>(context))(slab);
      },
      const_cast<Body*>(&body));
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_PARALLEL_H_
