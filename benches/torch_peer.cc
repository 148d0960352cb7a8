#include "benches/torch_peer.h"

#include <sched.h>
#include <spawn.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace kindling::bench {
namespace {

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

bool Readable(const std::string& path) {
  return access(path.c_str(), R_OK) == 0;
}

// RunfilesSource(path) is where this binary's runfiles keep a workspace
// file, "" when it has none.
std::string RunfilesSource(const std::string& path) {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return "";
  return std::string(self, length) + ".runfiles/kindling/" + path;
}

// Workspaces(): $BUILD_WORKSPACE_DIRECTORY under `tools/bazel run`, else the
// working directory and then the tree the binary was built from, so that
// bazel-bin/benches/<bench> finds the peers from any directory.
std::vector<std::string> Workspaces() {
  const std::string workspace = GetEnv("BUILD_WORKSPACE_DIRECTORY");
  if (!workspace.empty()) return {workspace};
  std::vector<std::string> workspaces = {"."};
  const std::string source_tree = SourceTree();
  if (!source_tree.empty()) workspaces.push_back(source_tree);
  return workspaces;
}

// The stamp tools/peers writes last, once every package is installed.
std::string TodayPythonFromPeersEnv() {
  for (const std::string& workspace : Workspaces()) {
    const std::string env = workspace + "/.peers";
    if (Readable(env + "/kindling-peers.stamp") &&
        access((env + "/bin/python").c_str(), X_OK) == 0) {
      return env + "/bin/python";
    }
  }
  return "";
}

// Value of "key=value" among the words of `line`, or "".
std::string Field(const std::string& line, const std::string& key) {
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

std::string SourceTree() {
  const std::string known = "benches/peers/torch_ops.py";
  char* resolved = realpath(RunfilesSource(known).c_str(), nullptr);
  if (resolved == nullptr) return "";
  std::string source(resolved);
  std::free(resolved);
  if (source.size() <= known.size() + 1 ||
      source.compare(source.size() - known.size(), known.size(), known) != 0) {
    return "";
  }
  return source.substr(0, source.size() - known.size() - 1);
}

std::vector<std::string> PeerPythons() {
  std::string today = GetEnv("KINDLING_PEER_PYTHON");
  if (today.empty()) today = TodayPythonFromPeersEnv();
  std::string old = GetEnv("KINDLING_TORCH113_PYTHON");
  if (old.empty()) old = "/usr/bin/python3";
  std::vector<std::string> pythons;
  if (!today.empty()) pythons.push_back(today);
  if (old != today) pythons.push_back(old);
  return pythons;
}

std::string FindSource(const std::string& path) {
  std::vector<std::string> candidates;
  const std::string workspace = GetEnv("BUILD_WORKSPACE_DIRECTORY");
  if (!workspace.empty()) candidates.push_back(workspace + "/" + path);
  candidates.push_back(path);
  const std::string runfiles = RunfilesSource(path);
  if (!runfiles.empty()) candidates.push_back(runfiles);
  for (const std::string& candidate : candidates) {
    if (Readable(candidate)) return candidate;
  }
  return "";
}

std::string CoresOfThisProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (!cores.empty()) cores += ",";
    cores += std::to_string(cpu);
  }
  return cores;
}

std::string PeerLabel(const std::string& torch_version) {
  if (torch_version.rfind("1.", 0) != 0) return "torch";
  std::string minor;
  for (size_t i = 2; i < torch_version.size() &&
                     std::isdigit(static_cast<unsigned char>(torch_version[i]));
       ++i) {
    minor += torch_version[i];
  }
  return "torch1" + minor;
}

TorchOpsPeer::TorchOpsPeer(const std::string& python, int threads) {
  const std::string script = FindSource("benches/peers/torch_ops.py");
  if (script.empty()) {
    error_ = "benches/peers/torch_ops.py not found";
    return;
  }
  int request_pipe[2];
  int answer_pipe[2];
  if (pipe(request_pipe) != 0 || pipe(answer_pipe) != 0) {
    error_ = "pipe failed";
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, request_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, answer_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, request_pipe[1]);
  posix_spawn_file_actions_addclose(&actions, answer_pipe[0]);
  std::string threads_flag = "--threads=" + std::to_string(threads);
  std::vector<char*> argv = {
      const_cast<char*>(python.c_str()), const_cast<char*>(script.c_str()),
      const_cast<char*>("--serve"), threads_flag.data(), nullptr};
  pid_t pid;
  const int spawned = posix_spawn(&pid, python.c_str(), &actions, nullptr,
                                  argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(request_pipe[0]);
  close(answer_pipe[1]);
  if (spawned != 0) {
    error_ = "cannot run " + python + ": " + std::strerror(spawned);
    close(request_pipe[1]);
    close(answer_pipe[0]);
    return;
  }
  to_child_ = request_pipe[1];
  from_child_ = fdopen(answer_pipe[0], "r");
  ReadHello(python, threads);
}

// The child's first line: "hello torch=<version> threads=<n> interop=<n>
// cores=<list>". A peer on other threads or cores would not be comparable.
bool TorchOpsPeer::ReadHello(const std::string& python, int threads) {
  char line[1024];
  if (std::fgets(line, sizeof(line), from_child_) == nullptr) {
    error_ = python +
             " benches/peers/torch_ops.py exited before answering "
             "(is torch installed for it?)";
    return false;
  }
  const std::string hello(line);
  version_ = Field(hello, "torch");
  if (hello.rfind("hello ", 0) != 0 || version_.empty()) {
    error_ = "unexpected first line from torch_ops.py: " + hello;
    return false;
  }
  label_ = PeerLabel(version_);
  const std::string want_threads = std::to_string(threads);
  if (Field(hello, "threads") != want_threads ||
      Field(hello, "interop") != want_threads) {
    error_ = "torch " + version_ + " runs other thread counts than Kindling (" +
             want_threads + "): " + hello;
    return false;
  }
  if (Field(hello, "cores") != CoresOfThisProcess()) {
    error_ = "torch " + version_ + " runs on cores " + Field(hello, "cores") +
             ", Kindling on " + CoresOfThisProcess();
    return false;
  }
  return true;
}

TorchOpsPeer::Timing TorchOpsPeer::Time(const std::string& op, int runs,
                                        int warmups) {
  if (!error_.empty()) return {};
  const std::string request =
      op + " " + std::to_string(runs) + " " + std::to_string(warmups) + "\n";
  if (write(to_child_, request.data(), request.size()) !=
      static_cast<ssize_t>(request.size())) {
    error_ = "write to torch " + version_ + " failed";
    return {};
  }
  char line[256];
  if (std::fgets(line, sizeof(line), from_child_) == nullptr) {
    error_ = "torch " + version_ + " gave no answer for " + op;
    return {};
  }
  char name[128];
  Timing timing;
  if (std::sscanf(line, "%127s %lf %lf", name, &timing.wall, &timing.cpu) !=
          3 ||
      name != op) {
    error_ = "torch " + version_ + ": bad answer for " + op + ": " + line;
    return {};
  }
  return timing;
}

const std::vector<TorchOpsPeer*>& TorchOpsPeers(int threads) {
  static const std::vector<TorchOpsPeer*>* peers = [threads] {
    auto* started = new std::vector<TorchOpsPeer*>;
    for (const std::string& python : PeerPythons()) {
      // Never destroyed: the children are reaped at exit.
      auto* peer = new TorchOpsPeer(python, threads);
      if (!peer->error().empty()) {
        std::fprintf(stderr, "peer %s: not measured: %s\n", python.c_str(),
                     peer->error().c_str());
        continue;
      }
      std::fprintf(stderr,
                   "peer %s: torch %s, %d intra-op and inter-op threads, "
                   "cores %s (vs_%s)\n",
                   python.c_str(), peer->version().c_str(), threads,
                   CoresOfThisProcess().c_str(), peer->label().c_str());
      started->push_back(peer);
    }
    return started;
  }();
  return *peers;
}

PeerSteps::PeerSteps(std::string op, int threads)
    : op_(std::move(op)), peers_(TorchOpsPeers(threads)) {
  for (TorchOpsPeer* peer : peers_) peer->Time(op_, 1, 2);
  seconds_.assign(peers_.size(), 0.0);
}

void PeerSteps::Run() {
  for (size_t i = 0; i < peers_.size(); ++i) {
    seconds_[i] += peers_[i]->Time(op_, 1, 0).wall;
  }
  ++runs_;
}

void PeerSteps::Report(benchmark::State& state, double kindling_seconds) const {
  if (peers_.empty()) {
    state.SkipWithError("no PyTorch peer could start (see stderr)");
    return;
  }
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i]->error().empty()) {
      state.SkipWithError(peers_[i]->error().c_str());
      return;
    }
    if (runs_ == 0) continue;
    const std::string& label = peers_[i]->label();
    state.counters[label + "_ms"] = 1e3 * seconds_[i] / runs_;
    state.counters["ratio_vs_" + label] = kindling_seconds / seconds_[i];
  }
}

void ReportPeerPeakMemory(benchmark::State& state, const std::string& op,
                          int threads, double kindling_peak_bytes) {
  const std::string script = FindSource("benches/peers/torch_ops.py");
  for (const std::string& python : PeerPythons()) {
    const std::string command = "'" + python + "' '" + script +
                                "' --threads=" + std::to_string(threads) +
                                " --peak-bytes " + op + " 2>/dev/null";
    FILE* answer = script.empty() ? nullptr : popen(command.c_str(), "r");
    char line[256] = "";
    const bool read =
        answer != nullptr && fgets(line, sizeof(line), answer) != nullptr;
    if (answer != nullptr) pclose(answer);
    char version[64], name[128];
    double bytes = 0;
    if (!read ||
        std::sscanf(line, "torch=%63s %127s %lf", version, name, &bytes) != 3 ||
        name != op || bytes <= 0) {
      std::fprintf(stderr, "peak memory of %s: no answer from %s\n", op.c_str(),
                   python.c_str());
      continue;
    }
    const std::string label = PeerLabel(version);
    state.counters[label + "_peak_MiB"] = bytes / double{1 << 20};
    state.counters["peak_vs_" + label] = kindling_peak_bytes / bytes;
  }
}

int PeerBenchmarkMain(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/1);
    execv("/proc/self/exe", argv);
    std::perror("re-executing with OMP_WAIT_POLICY=passive");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// --- The peers' JSON lines ---------------------------------------------------

std::optional<double> JsonNumber(const std::string& json, const char* key) {
  const std::string tag = std::string("\"") + key + "\": ";
  const size_t at = json.find(tag);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = json.c_str() + at + tag.size();
  if (*begin == '[') ++begin;  // a list: its first element
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return value;
}

std::string JsonString(const std::string& json, const char* key) {
  const std::string tag = std::string("\"") + key + "\": \"";
  const size_t at = json.find(tag);
  if (at == std::string::npos) return "";
  const size_t begin = at + tag.size();
  return json.substr(begin, json.find('"', begin) - begin);
}

std::vector<double> JsonNumbers(const std::string& json, const char* key) {
  const std::string tag = std::string("\"") + key + "\": [";
  std::vector<double> values;
  const size_t at = json.find(tag);
  if (at == std::string::npos) return values;
  const char* cursor = json.c_str() + at + tag.size();
  while (*cursor != ']' && *cursor != '\0') {
    char* end = nullptr;
    values.push_back(std::strtod(cursor, &end));
    if (end == cursor) break;
    cursor = end;
    while (*cursor == ',' || *cursor == ' ') ++cursor;
  }
  return values;
}

std::vector<PeerColumn> TrainingPeerColumns(const std::string& torch_script,
                                            const std::string& jax_script) {
  std::vector<PeerColumn> columns;
  const std::vector<std::string> pythons = PeerPythons();
  for (const std::string& python : pythons) {
    columns.push_back({"", python, torch_script, "", columns.empty()});
  }
  if (pythons.size() > 1) {
    columns.push_back(
        {"torch_compile", pythons[0], torch_script, " --compile", false});
    columns.push_back({"jax", pythons[0], jax_script, "", false});
  }
  return columns;
}

}  // namespace kindling::bench
