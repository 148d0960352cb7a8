// What data parallelism costs on one machine: one epoch of an example
// trained by 2 ranks x 1 thread against 1 process x 2 threads on the same 2
// cores, per engine, measured back to back in each repetition.
//
//   BM_Epoch/<example>/<backend>
//     single_s          the epoch's training seconds, 1 process x 2 threads
//     parallel_s        the same epoch (same global batch of 128, same data
//                       order), 2 ranks x 1 thread, averaging gradients
//     ratio_vs_single   parallel_s / single_s: the data-parallel path's
//                       overhead (<= 1.15 is the goal; < 1 when two
//                       single-threaded processes use the cores better
//                       than one process with two threads)
//     hidden_fraction   the share of the gradient all-reduce time that ran
//                       while backward was still computing
//     comm_ms_per_step  the all-reduce thread's time per step
//
// <example> is quickstart (the MLP) or cnn; <backend> is gloo (started by
// --nproc=2: TCP over loopback) or mpi (mpirun -np 2: shared memory). The
// examples themselves run as child processes with the flags a user would
// give, and their own summary lines are parsed.
//
//   tools/bazel build //benches:data_parallel_bench //examples:quickstart
//   //examples:cnn taskset -c 0,1 bazel-bin/benches/data_parallel_bench
//       --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// KINDLING_DP_BENCH_STEPS=N stops each run after N steps (the smoke test);
// KINDLING_DP_BENCH_DATA=DIR reads Fashion-MNIST from DIR;
// KINDLING_DP_BENCH_FLAGS adds flags to every run (--bucket_kib=256).
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"

namespace {

// ExamplePath() finds an example binary in this binary's runfiles, in
// bazel-bin's examples/ beside benches/, or in this binary's own directory
// (the GPU bundle's bin/).
std::string ExamplePath(const std::string& name) {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  const std::string me(self, length > 0 ? length : 0);
  for (const std::string& candidate :
       {me + ".runfiles/kindling/examples/" + name,
        me.substr(0, me.rfind("/benches/")) + "/examples/" + name,
        me.substr(0, me.rfind('/')) + "/" + name}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct RunResult {
  double train_seconds = 0;
  double comm_seconds = 0;
  double exposed_seconds = 0;
  double steps = 0;
  bool ok = false;
  std::string output;
};

// After() is the number following `key` in `text`, if any.
std::optional<double> After(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  double value = 0;
  const size_t begin = at + key.size();
  const size_t end = text.find_first_of(" ,)", begin);
  if (!absl::SimpleAtod(text.substr(begin, end - begin), &value)) {
    return std::nullopt;
  }
  return value;
}

RunResult Run(const std::string& command) {
  RunResult result;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(
      popen((command + " 2>&1").c_str(), "r"), pclose);
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) {
    result.output += buffer.data();
  }
  const int status = pclose(pipe.release());
  const std::optional<double> train = After(result.output, "(training ");
  result.ok = status == 0 && train.has_value();
  result.train_seconds = train.value_or(0);
  result.steps = After(result.output, "gradient all-reduce: ").value_or(0);
  result.comm_seconds = After(result.output, " MB, ").value_or(0);
  result.exposed_seconds = After(result.output, "thread, ").value_or(0);
  return result;
}

void BM_Epoch(benchmark::State& state, const std::string& example,
              const std::string& backend) {
  const std::string binary = ExamplePath(example);
  if (binary.empty()) {
    state.SkipWithError(
        ("examples/" + example + " not found: build //examples:" + example)
            .c_str());
    return;
  }
  std::string common = absl::StrCat(
      binary, " --epochs=1 --threads=2 --out_dir=/tmp/kindling_dp_bench_",
      example);
  if (const char* steps = std::getenv("KINDLING_DP_BENCH_STEPS")) {
    absl::StrAppend(&common, " --max_steps=", steps);
  }
  if (const char* data = std::getenv("KINDLING_DP_BENCH_DATA")) {
    absl::StrAppend(&common, " --data_dir=", data);
  }
  if (const char* flags = std::getenv("KINDLING_DP_BENCH_FLAGS")) {
    absl::StrAppend(&common, " ", flags);
  }
  const std::string parallel =
      backend == "mpi"
          ? absl::StrCat(
                "mpirun --allow-run-as-root --oversubscribe --bind-to none "
                "--mca plm isolated -np 2 ",
                common)
          : absl::StrCat(common, " --nproc=2 --backend=gloo");
  RunResult single, dp;
  for (auto _ : state) {
    single = Run(common);
    dp = Run(parallel);
    if (!single.ok || !dp.ok) {
      state.SkipWithError(
          ("a run failed:\n" + (single.ok ? dp.output : single.output))
              .c_str());
      return;
    }
    state.SetIterationTime(single.train_seconds + dp.train_seconds);
  }
  state.counters["single_s"] = single.train_seconds;
  state.counters["parallel_s"] = dp.train_seconds;
  state.counters["ratio_vs_single"] = dp.train_seconds / single.train_seconds;
  state.counters["hidden_fraction"] =
      dp.comm_seconds > 0 ? 1 - dp.exposed_seconds / dp.comm_seconds : 0;
  state.counters["comm_ms_per_step"] =
      dp.steps > 0 ? dp.comm_seconds * 1e3 / dp.steps : 0;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Epoch, quickstart / gloo, "quickstart", "gloo")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_Epoch, quickstart / mpi, "quickstart", "mpi")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_Epoch, cnn / gloo, "cnn", "gloo")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_Epoch, cnn / mpi, "cnn", "mpi")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
