// ParallelFor: splits a loop over OpenMP threads when it is big enough.
//
// Kernels call ParallelFor(total, grain, body) with body(begin, end) over
// disjoint ranges covering [0, total). Work below 2 * grain items runs
// serially on the calling thread without touching the OpenMP runtime, so tiny
// ops (a bias of 16 floats) cost no thread wake-up; larger work is cut into
// contiguous chunks of at least `grain` items, a few per thread, scheduled
// dynamically. Nested calls (a kernel invoked from inside a parallel region)
// run serially.
#ifndef KINDLING_BACKEND_CPU_PARALLEL_H_
#define KINDLING_BACKEND_CPU_PARALLEL_H_

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kindling::cpu {

// kElementGrain is the fewest elements of a memory-bound loop worth giving to
// one more thread: below it the fork/join (a few microseconds) costs more
// than the work.
inline constexpr int64_t kElementGrain = int64_t{1} << 16;

// MaxThreads() is how many threads ParallelFor may use. Under
// ThreadSanitizer it is 1: libgomp is not instrumented, so TSAN cannot see
// its barriers and would report every parallel kernel as a race.
inline int MaxThreads() {
#if defined(_OPENMP) && !defined(__SANITIZE_THREAD__)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// kChunksPerThread: work is cut into this many chunks per thread and handed
// out dynamically, so a thread that loses its core (a busy machine, a
// hyperthread sibling) delays the op by one chunk, not by half of it.
inline constexpr int64_t kChunksPerThread = 8;

template <class Body>
void ParallelFor(int64_t total, int64_t grain, const Body& body) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t threads = std::min<int64_t>(MaxThreads(), total / grain);
#ifdef _OPENMP
  if (omp_in_parallel()) threads = 1;
#endif
  if (threads <= 1) {
    body(int64_t{0}, total);
    return;
  }
#ifdef _OPENMP
  const int64_t chunks = std::min(total / grain, threads * kChunksPerThread);
#pragma omp parallel for num_threads(static_cast <int>(threads)) \
    schedule(dynamic, 1)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    body(total * chunk / chunks, total * (chunk + 1) / chunks);
  }
#endif
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_PARALLEL_H_
