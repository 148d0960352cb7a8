// The PyTorch peers of the benchmarks (docs/performance.md): today's release
// from the virtual environment `tools/peers` builds, and Debian's torch 1.13.
//
// Every benchmark that compares with PyTorch reports one ratio per peer that
// runs: `vs_torch` for today's release and `vs_torch113` for Debian's. Where
// tools/peers has not been run (or failed), only the 1.13 column appears.
// Both peers run as child processes on the cores this process may use (the
// child inherits the affinity mask, so `taskset -c 0,1 <bench>` pins both)
// with as many intra-op and inter-op threads as Kindling's kernels; each
// child reports its version, threads and cores when it starts, and a peer
// whose threads or cores differ from Kindling's is refused.
#ifndef KINDLING_BENCHES_TORCH_PEER_H_
#define KINDLING_BENCHES_TORCH_PEER_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace kindling::bench {

// PeerPythons() lists the interpreters of the PyTorch peers, today's first:
//   today's   $KINDLING_PEER_PYTHON when set, else
//   <workspace>/.peers/bin/python
//             when `tools/peers` has completed that environment (its stamp);
//   1.13      $KINDLING_TORCH113_PYTHON when set, else /usr/bin/python3.
// The workspace is $BUILD_WORKSPACE_DIRECTORY under `tools/bazel run`, else
// the working directory, then the source tree the binary was built from (so
// `bazel-bin/benches/<bench>` finds it from any directory). An interpreter
// listed twice is listed once.
std::vector<std::string> PeerPythons();

// SourceTree() is the workspace this binary was built from, which its
// runfiles link each source file to; "" when it has no such link.
std::string SourceTree();

// FindSource(path) is a workspace file (e.g. "benches/peers/torch_ops.py")
// under $BUILD_WORKSPACE_DIRECTORY, the working directory or the binary's
// runfiles; "" when none has it.
std::string FindSource(const std::string& path);

// CoresOfThisProcess() is the sorted list of CPUs this process may run on,
// as "0,1".
std::string CoresOfThisProcess();

// PeerLabel(torch_version) is the counter suffix for a peer of that version:
// "torch113" for 1.13.x, "torch" for 2.x and later, "torch<major><minor>"
// for any other 1.x.
std::string PeerLabel(const std::string& torch_version);

// TorchOpsPeer is benches/peers/torch_ops.py --serve in a child process: a
// request line "<op> <runs> <warmups>" in, "<op> <median wall seconds>
// <median process CPU seconds>" out. error() is non-empty when it could not
// start, reported other threads or cores than Kindling's, or stopped
// answering; every later Time() then returns negative times.
class TorchOpsPeer {
 public:
  TorchOpsPeer(const std::string& python, int threads);
  TorchOpsPeer(const TorchOpsPeer&) = delete;
  TorchOpsPeer& operator=(const TorchOpsPeer&) = delete;

  const std::string& error() const { return error_; }
  // The torch version the child imported, e.g. "2.15.0+cpu".
  const std::string& version() const { return version_; }
  // "torch" or "torch113" (PeerLabel of version()).
  const std::string& label() const { return label_; }

  struct Timing {
    double wall = -1;
    double cpu = -1;
  };
  // Time() is torch's median time of `runs` calls of `op` after `warmups`
  // untimed ones.
  Timing Time(const std::string& op, int runs, int warmups);

 private:
  bool ReadHello(const std::string& python, int threads);

  std::string error_;
  std::string version_;
  std::string label_;
  int to_child_ = -1;
  FILE* from_child_ = nullptr;
};

// TorchOpsPeers(threads) starts, once per process, a TorchOpsPeer for each
// of PeerPythons() and returns those that started (today's first). It prints
// one line per peer to stderr: version, interpreter, threads and cores, or
// why it did not start.
const std::vector<TorchOpsPeer*>& TorchOpsPeers(int threads);

// PeerSteps times one torch_ops.py op in every peer of TorchOpsPeers(), one
// call per Run(), for benchmarks that interleave it with their own op (timer
// paused) and report Kindling's time over each peer's.
class PeerSteps {
 public:
  // Starts the peers (if not yet) and warms each up with two calls of `op`.
  PeerSteps(std::string op, int threads);

  // Runs `op` once in every peer, adding its wall seconds.
  void Run();

  // Sets, for each peer, <label>_ms (mean ms per call) and
  // ratio_vs_<label> = kindling_seconds / the peer's seconds over as many
  // calls as Run() made. Skips the benchmark with the error of a peer that
  // failed, or when no peer started.
  void Report(benchmark::State& state, double kindling_seconds) const;

 private:
  std::string op_;
  std::vector<TorchOpsPeer*> peers_;
  std::vector<double> seconds_;
  int64_t runs_ = 0;
};

// ReportPeerPeakMemory() runs `torch_ops.py --peak-bytes <op>` once with
// each of PeerPythons(), each in a process of its own, and sets
// <label>_peak_MiB (the resident memory one call adds at its peak) and
// peak_vs_<label> = kindling_peak_bytes / the peer's. A peer that gives no
// answer gets no counters and a line on stderr.
void ReportPeerPeakMemory(benchmark::State& state, const std::string& op,
                          int threads, double kindling_peak_bytes);

// PeerBenchmarkMain() is Google Benchmark's main for a benchmark with
// PyTorch peers. Kindling and each peer take turns on the same cores, and
// with libgomp's default wait policy each one's OpenMP workers keep spinning
// for a while after every parallel region, stealing the cores the other needs
// next (a 0.7 ms sqrt was measured at 7 ms that way). So it runs the
// benchmarks with OMP_WAIT_POLICY=passive, re-executing the binary once to
// set it, since libgomp reads it at load (the children inherit it), unless
// the caller set a policy.
int PeerBenchmarkMain(int argc, char** argv);

// PeerColumn: one peer of a training benchmark: a label for its counters
// ("" = PeerLabel() of the version it prints), and how to run it.
struct PeerColumn {
  std::string label;   // torch, torch113, torch_compile, jax
  std::string python;  // the interpreter
  std::string script;  // under benches/peers/
  std::string extra;   // appended to the command line
  bool required;       // a failure ends the benchmark (else: column left out)
};

// TrainingPeerColumns(): eager `torch_script` with each of PeerPythons()
// (today's, Debian's 1.13), and with today's interpreter also
// `torch_script --compile` (torch_compile) and `jax_script` (jax). The first
// must run; another interpreter without torch (Debian's on the GPU host)
// only loses its column.
std::vector<PeerColumn> TrainingPeerColumns(const std::string& torch_script,
                                            const std::string& jax_script);

// JsonNumber(), JsonString() and JsonNumbers() read the value of "key" from
// a peer script's one-line JSON result (the peers' own output, not user
// input): a number (a list's first element), a string, a list of numbers.
std::optional<double> JsonNumber(const std::string& json, const char* key);
std::string JsonString(const std::string& json, const char* key);
std::vector<double> JsonNumbers(const std::string& json, const char* key);

}  // namespace kindling::bench

#endif  // KINDLING_BENCHES_TORCH_PEER_H_
