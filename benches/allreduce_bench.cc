// All-reduce cost of each data-parallel engine on this machine, against a
// memcpy of the same bytes measured in the same run.
//
//   BM_AllReduce/BYTES    one in-place f32 sum over all ranks of BYTES bytes
//     us_per_op            time of one all-reduce
//     bus_GBps             NCCL's "bus bandwidth": BYTES x 2(n-1)/n / time,
//                          the bytes each rank must send and receive in a
//                          ring all-reduce, per second
//     ratio_vs_memcpy      bus_GBps / the GB/s of a memcpy of BYTES bytes
//                          (read + write) on one core, timed in the same
//                          benchmark: how close the transport comes to
//                          moving memory on this machine
//   BM_Latency             a 2-element f64 all-reduce (the Trainer's per-step
//                          loss and stop agreement)
//
// It runs as every rank of a job, started like a training job:
//
//   bazel-bin/tools/kindling-launch --nproc 2 --
//   bazel-bin/benches/allreduce_bench   # Gloo mpirun -np 2
//   bazel-bin/benches/allreduce_bench                                   # MPI
//
// Started alone it launches 2 Gloo ranks of itself. Every rank runs the same
// fixed iteration counts (Google Benchmark's adaptive counts could differ
// between ranks, and a collective needs all of them); rank 0 prints.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "kindling/core/check.h"
#include "kindling/distributed/communicator.h"
#include "kindling/distributed/connect.h"
#include "kindling/distributed/launch_environment.h"
#include "kindling/distributed/local_launcher.h"

namespace kindling::distributed {
namespace {

Communicator* comm = nullptr;

// Iterations() keeps each size near 100 MB moved per repetition, at least
// 5 and at most 2000 operations.
int64_t Iterations(int64_t bytes) {
  return std::clamp<int64_t>((int64_t{100} << 20) / std::max<int64_t>(bytes, 1),
                             5, 2000);
}

double MemcpySeconds(int64_t bytes, int64_t iterations) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes);  // fault the pages in
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    std::memcpy(to.data(), from.data(), bytes);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count() /
         iterations;
}

// OpSeconds() runs the state's loop over `op` and returns the mean seconds
// per operation (the loop's wall time; every rank runs the same count).
template <class Op>
double OpSeconds(benchmark::State& state, Op op) {
  KINDLING_CHECK(comm->Barrier().ok(), "barrier");
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    const absl::Status status = op();
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return 0;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
             .count() /
         std::max<int64_t>(state.iterations(), 1);
}

void BM_AllReduce(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int64_t count = bytes / 4;
  std::vector<float> data(count, 1.0f);
  const double memcpy_seconds = MemcpySeconds(bytes, 20);
  const double seconds = OpSeconds(state, [&] {
    return comm->AllReduce(data.data(), count, DType::kF32, ReduceOp::kSum);
  });
  const int n = comm->world_size();
  const double bus_bytes = bytes * 2.0 * (n - 1) / n;
  state.counters["us_per_op"] = seconds * 1e6;
  state.counters["bus_GBps"] = bus_bytes * 1e-9 / seconds;
  state.counters["memcpy_GBps"] = bytes * 1e-9 / memcpy_seconds;
  state.counters["ratio_vs_memcpy"] =
      (bus_bytes / seconds) / (bytes / memcpy_seconds);
  state.SetLabel(absl::StrFormat("%s, %d ranks", comm->backend(), n));
}

void BM_Latency(benchmark::State& state) {
  double values[2] = {1, 0};
  const double seconds = OpSeconds(state, [&] {
    return comm->AllReduce(values, 2, DType::kF64, ReduceOp::kSum);
  });
  state.counters["us_per_op"] = seconds * 1e6;
  state.SetLabel(
      absl::StrFormat("%s, %d ranks", comm->backend(), comm->world_size()));
}

void RegisterBenchmarks() {
  for (int64_t bytes : {int64_t{1} << 10, int64_t{16} << 10, int64_t{256} << 10,
                        int64_t{1310720}, int64_t{4} << 20, int64_t{25} << 20,
                        int64_t{64} << 20, int64_t{256} << 20}) {
    benchmark::RegisterBenchmark("BM_AllReduce", BM_AllReduce)
        ->Arg(bytes)
        ->Iterations(Iterations(bytes))
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_Latency", BM_Latency)
      ->Iterations(2000)
      ->UseRealTime();
}

}  // namespace
}  // namespace kindling::distributed

int main(int argc, char** argv) {
  namespace dist = kindling::distributed;
  absl::StatusOr<dist::LaunchEnvironment> launch =
      dist::ReadLaunchEnvironment();
  KINDLING_CHECK(launch.ok(), "%s", launch.status().ToString());
  if (launch->launcher == dist::LaunchEnvironment::Launcher::kSingle) {
    std::vector<std::string> args = {"/proc/self/exe"};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    dist::LocalLaunchOptions options;
    options.nproc = 2;
    absl::StatusOr<int> code = dist::LaunchLocal(options, args);
    KINDLING_CHECK(code.ok(), "%s", code.status().ToString());
    return *code;
  }
  absl::StatusOr<std::unique_ptr<dist::Communicator>> connected =
      dist::Connect(*launch, {});
  KINDLING_CHECK(connected.ok(), "%s", connected.status().ToString());
  dist::comm = connected->get();
  if (dist::comm->rank() != 0) {
    KINDLING_CHECK(std::freopen("/dev/null", "w", stdout) != nullptr, "stdout");
  }
  benchmark::Initialize(&argc, argv);
  dist::RegisterBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
