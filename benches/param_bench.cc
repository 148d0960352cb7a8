// Param<T> hot paths: reading an initialized value, first lazy init, copying a
// lazy vs an initialized param, and many threads reading one param.
//
// Goals (issue #2): val() on an initialized param <= 5 ns; copying a lazy
// param allocates nothing and takes <= 50 ns. Each benchmark reports
// `vs_goal` = measured time per operation / goal (<= 1 meets it) and
// `heap_allocs_per_op`, counted by the global operator new below.
//
//   tools/bazel run //benches:param_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "kindling/core/param.h"
#include "tests/core/counting_parameter.h"

namespace {

std::atomic<int64_t> heap_allocations{0};

}  // namespace

// Counts every heap allocation in this binary.
void* operator new(size_t size) {
  heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace kindling {
namespace {

using ::kindling::testing::CountingParam;
using ::kindling::testing::LazyCountingParam;

constexpr double kValGoalSeconds = 5e-9;
constexpr double kCopyGoalSeconds = 50e-9;

// Runs `op` once per benchmark iteration and reports `vs_goal` (seconds per
// op / goal) and heap allocations per op. ClobberMemory() after each op makes
// the compiler reload the Param's state every time instead of hoisting the
// loop-invariant read out of the loop.
template <class Op>
void MeasureAgainstGoal(benchmark::State& state, double goal_seconds, Op op) {
  const int64_t allocations_before = heap_allocations.load();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    op();
    benchmark::ClobberMemory();
  }
  const std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  const double iterations = static_cast<double>(state.iterations());
  // Each thread of a multi-threaded run reports its own figures; kAvgThreads
  // averages them instead of the default sum.
  state.counters["vs_goal"] =
      benchmark::Counter(elapsed.count() / iterations / goal_seconds,
                         benchmark::Counter::kAvgThreads);
  state.counters["heap_allocs_per_op"] = benchmark::Counter(
      static_cast<double>(heap_allocations.load() - allocations_before) /
          iterations,
      benchmark::Counter::kAvgThreads);
}

void BM_ValInitialized(benchmark::State& state) {
  const CountingParam param = LazyCountingParam({256});
  (void)param.val();
  MeasureAgainstGoal(state, kValGoalSeconds,
                     [&] { benchmark::DoNotOptimize(&param.val()); });
}
BENCHMARK(BM_ValInitialized);

// Create a lazy param of `n` floats and read it: the init function runs and
// allocates the storage.
void BM_FirstLazyInit(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    CountingParam param = LazyCountingParam({n});
    benchmark::DoNotOptimize(param.val().data().data());
  }
  state.SetBytesProcessed(state.iterations() * n * sizeof(float));
}
BENCHMARK(BM_FirstLazyInit)->Arg(16)->Arg(1 << 20);

void BM_CopyLazy(benchmark::State& state) {
  const CountingParam param = LazyCountingParam({4096, 4096});
  MeasureAgainstGoal(state, kCopyGoalSeconds, [&] {
    CountingParam copy = param;
    benchmark::DoNotOptimize(&copy);
  });
  if (param.is_initialized()) state.SkipWithError("copy initialized the param");
}
BENCHMARK(BM_CopyLazy);

void BM_CopyInitialized(benchmark::State& state) {
  const CountingParam param = LazyCountingParam({4096});
  (void)param.val();
  MeasureAgainstGoal(state, kCopyGoalSeconds, [&] {
    CountingParam copy = param;
    benchmark::DoNotOptimize(&copy);
  });
}
BENCHMARK(BM_CopyInitialized);

// More threads than cores would measure the scheduler, not the Param.
int HardwareThreads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Shared by the multi-threaded benchmarks: one initialized param.
const CountingParam& SharedInitializedParam() {
  static const CountingParam* const shared = [] {
    auto* param = new CountingParam(LazyCountingParam({256}));
    (void)param->val();
    return param;
  }();
  return *shared;
}

// Many threads read one shared, initialized param (inference fan-out): reads
// are a plain acquire load, so they scale with cores.
void BM_ConcurrentReaders(benchmark::State& state) {
  const CountingParam& shared = SharedInitializedParam();
  MeasureAgainstGoal(state, kValGoalSeconds,
                     [&] { benchmark::DoNotOptimize(&shared.val()); });
}
BENCHMARK(BM_ConcurrentReaders)
    ->ThreadRange(1, HardwareThreads())
    ->UseRealTime();

// Many threads copy one param: copies contend on one refcount cache line.
void BM_ConcurrentCopies(benchmark::State& state) {
  const CountingParam& shared = SharedInitializedParam();
  MeasureAgainstGoal(state, kCopyGoalSeconds, [&] {
    CountingParam copy = shared;
    benchmark::DoNotOptimize(&copy);
  });
}
BENCHMARK(BM_ConcurrentCopies)
    ->ThreadRange(1, HardwareThreads())
    ->UseRealTime();

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  // libstdc++ skips atomic refcounting while a process has never started a
  // thread (__libc_single_threaded). Real programs have BLAS and OpenMP
  // threads, so start one first and measure the atomic cost they pay.
  std::thread([] {}).join();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
