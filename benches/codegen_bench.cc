// kindling-gen's wall time per header against `clang++-14 -fsyntax-only` with
// the same flags on the same header. The generator parses the header with the
// same Clang, so parsing is the floor; the goal is at most 1.5x of it.
//
//   tools/bazel run //benches:codegen_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one line)
//
// Each iteration runs both as subprocesses, clang first, and times them with a
// wall clock; the reported time is the generator's, and the counters are
// clang_ms, generator_ms and ratio = generator / clang over the iterations.
//
// Headers (the `header` argument):
//   0  std containers only: <vector>, <array>, <optional>, <variant>, <string>,
//      <map> and stand-in leaves; no repository headers.
//   1  the real runtime: kindling/core/param.h and kindling/module/buffer.h
//      (with Abseil); needs the source tree, found through
//      BUILD_WORKSPACE_DIRECTORY, which `bazel run` sets.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

constexpr char kClang[] = "/usr/bin/clang++-14";
constexpr char kResourceDir[] = "/usr/lib/llvm-14/lib/clang/14.0.6";

constexpr char kStdHeader[] = R"(#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#define KINDLING_MODULE [[clang::annotate("kindling::module")]]
#define KINDLING_SKIP [[clang::annotate("kindling::skip")]]

namespace kindling {
template <int Rank> struct Tensor {};
template <class T> struct Param { T value; };
template <class T> struct Buffer { T value; };
}  // namespace kindling

namespace bench {
struct KINDLING_MODULE Linear {
  kindling::Param<kindling::Tensor<2>> weight;
  std::optional<kindling::Param<kindling::Tensor<1>>> bias;
};
struct KINDLING_MODULE LayerNorm {
  kindling::Param<kindling::Tensor<1>> gamma;
  kindling::Buffer<kindling::Tensor<1>> running_mean;
};
struct KINDLING_MODULE Block {
  Linear attention;
  std::array<Linear, 2> mlp;
  std::variant<LayerNorm, Linear> norm;
};
template <class T, int N>
struct KINDLING_MODULE Stack {
  std::vector<Block> blocks;
  std::array<kindling::Param<T>, N> scales;
  std::map<std::string, int64_t> vocabulary;
  int64_t num_classes;
  KINDLING_SKIP std::string label;
};
}  // namespace bench
)";

constexpr char kRuntimeHeader[] = R"(#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kindling/core/param.h"
#include "kindling/module/annotations.h"
#include "kindling/module/buffer.h"

namespace bench {
struct Scalar {
  using DeviceType = int;
  using ShapeType = std::vector<int64_t>;
  float value = 0.0f;
  int device() const { return 0; }
  ShapeType shape() const { return {}; }
  bool is_require_grad() const { return true; }
  Scalar set_require_grad(bool) const { return *this; }
};
struct KINDLING_MODULE Linear {
  kindling::Param<Scalar> weight;
  std::optional<kindling::Param<Scalar>> bias;
};
struct KINDLING_MODULE BatchNorm {
  kindling::Param<Scalar> gamma;
  kindling::Buffer<Scalar> running_mean;
};
struct KINDLING_MODULE Model {
  std::vector<Linear> layers;
  std::array<BatchNorm, 2> norms;
  int64_t num_classes;
  KINDLING_SKIP std::string label;
};
}  // namespace bench
)";

// The generator from this binary's runfiles.
std::string GeneratorPath() {
  if (const char* runfiles = std::getenv("RUNFILES_DIR")) {
    return std::string(runfiles) + "/kindling/codegen/kindling-gen";
  }
  const fs::path self = fs::read_symlink("/proc/self/exe");
  const fs::path beside =
      self.string() + ".runfiles/kindling/codegen/kindling-gen";
  if (fs::exists(beside)) return beside.string();
  return "codegen/kindling-gen";
}

// Runs `argv` with output discarded; returns its wall time in seconds, or a
// negative value if it could not run or failed.
double RunSeconds(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null",
                                   O_WRONLY, 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid;
  const int spawned =
      posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1.0;
  int status = 0;
  waitpid(pid, &status, 0);
  const std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1.0;
  return elapsed.count();
}

// A header and the compiler flags to parse it with, in a fresh directory.
struct BenchHeader {
  fs::path directory;
  std::string header;
  std::vector<std::string> flags;
};

bool MakeHeader(int which, BenchHeader& bench, std::string& error) {
  bench.directory = fs::temp_directory_path() /
                    ("kindling_codegen_bench_" + std::to_string(getpid()) +
                     "_" + std::to_string(which));
  fs::create_directories(bench.directory);
  bench.header = (bench.directory / "model.h").string();
  bench.flags = {"-std=c++20", "-xc++-header",
                 std::string("-resource-dir=") + kResourceDir, "-iquote",
                 bench.directory.string()};
  if (which == 1) {
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    if (workspace == nullptr) {
      error = "needs the source tree: run with `tools/bazel run`";
      return false;
    }
    // "kindling/..." names runtime/kindling/..., as strip_include_prefix
    // does for the runtime's libraries.
    bench.flags.push_back("-I");
    bench.flags.push_back((fs::path(workspace) / "runtime").string());
  }
  std::ofstream(bench.header) << (which == 0 ? kStdHeader : kRuntimeHeader);
  return true;
}

void BM_GeneratorVsClangSyntaxOnly(benchmark::State& state) {
  BenchHeader bench;
  std::string error;
  if (!MakeHeader(static_cast<int>(state.range(0)), bench, error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  std::vector<std::string> clang = {kClang};
  clang.insert(clang.end(), bench.flags.begin(), bench.flags.end());
  clang.push_back("-fsyntax-only");
  clang.push_back(bench.header);
  std::vector<std::string> generator = {
      GeneratorPath(), bench.header, "-o",
      (bench.directory / "model.kindling.h").string(), "--"};
  generator.insert(generator.end(), bench.flags.begin(), bench.flags.end());

  double clang_seconds = 0.0;
  double generator_seconds = 0.0;
  for (auto _ : state) {
    const double clang_run = RunSeconds(clang);
    const double generator_run = RunSeconds(generator);
    if (clang_run < 0.0 || generator_run < 0.0) {
      state.SkipWithError(clang_run < 0.0 ? "clang++-14 -fsyntax-only failed"
                                          : "kindling-gen failed");
      break;
    }
    clang_seconds += clang_run;
    generator_seconds += generator_run;
    state.SetIterationTime(generator_run);
  }
  const double iterations = static_cast<double>(state.iterations());
  if (iterations > 0 && clang_seconds > 0.0) {
    state.counters["clang_ms"] = 1e3 * clang_seconds / iterations;
    state.counters["generator_ms"] = 1e3 * generator_seconds / iterations;
    state.counters["ratio"] = generator_seconds / clang_seconds;
  }
  fs::remove_all(bench.directory);
}
BENCHMARK(BM_GeneratorVsClangSyntaxOnly)
    ->ArgName("header")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
