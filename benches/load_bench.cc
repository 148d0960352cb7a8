// load_bench: checkpoint save/load memory and speed, Burn's unified_loading
// shape: 20 Linear layers (1024->2048, then 19x 2048->2048), 81.8M f32
// parameters, 312 MiB, saved once as safetensors. Then a PyTorch-layout
// checkpoint of BERT-base's shapes (110M parameters; Linear weights
// [out, in]): how much of it loads borrowed, the peak RSS of a lazy load and
// first forward, and the forward time against Kindling-layout weights.
//
//   tools/bazel run //benches:load_bench            # full size
//   tools/bazel run //benches:load_bench -- --layers=2 --width=64   # smoke
//
// Each phase runs in a fresh subprocess (this binary re-executed with
// --phase), because a process's peak RSS (VmHWM) never goes down: a phase's
// peak is its own. The page cache is warm (the file was just written and is
// read once before timing). Reported as ratios to the file size (memory) and
// to a memcpy of the same bytes (time), measured in the same run.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benches/bench_models.kindling.h"
#include "kindling/core/param.h"
#include "kindling/io/module_file.h"
#include "kindling/module/erased.h"
#include "kindling/module/initializer.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/record.h"
#include "kindling/nn/embedding.h"
#include "kindling/nn/layer_norm.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/convert_span.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace bench {

using kindling::Device;
using kindling::Param;
using kindling::Tensor;
using kindling::TensorBase;
using kindling::nn::Linear;
// The model: kindling::bench::Deep (benches/bench_models.h), a generated
// module holding std::vector<nn::Linear>.
using Model = kindling::bench::Deep;

struct Flags {
  std::string phase;
  std::string dir = "/tmp";
  int layers = 20;
  int64_t input = 1024;
  int64_t width = 2048;
  int repetitions = 3;
  // The BERT-shaped model (bert-base-uncased by default).
  int bert_layers = 12;
  int64_t bert_hidden = 768;
  int64_t bert_vocab = 30522;
  int64_t bert_tokens = 128;  // tokens per forward pass
};

// A lazy model: nothing allocated.
Model MakeModel(const Flags& flags) {
  Model model;
  for (int i = 0; i < flags.layers; ++i) {
    const int64_t in = i == 0 ? flags.input : flags.width;
    model.layers.push_back(kindling::nn::LinearConfig{in, flags.width}.Init());
  }
  return model;
}

// Reads every parameter once (initializing lazy ones).
double Touch(const Model& model) {
  double sum = 0;
  for (const Linear& layer : model.layers) {
    const Tensor<2>& weight = *layer.weight;
    const float* data = weight.base().data_as<float>();
    const int64_t n = weight.numel();
    // One read per 4 KiB page faults every page in; a full sum would
    // measure arithmetic, not memory.
    for (int64_t i = 0; i < n; i += 1024) sum += data[i];
    sum += (**layer.bias).base().data_as<float>()[0];
  }
  return sum;
}

int64_t StatusKiB(const char* field) {
  FILE* status = std::fopen("/proc/self/status", "r");
  char line[256];
  int64_t value = -1;
  const size_t length = std::strlen(field);
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::strncmp(line, field, length) == 0) {
      value = std::strtoll(line + length, nullptr, 10);
    }
  }
  std::fclose(status);
  return value;
}
int64_t RssBytes() { return StatusKiB("VmRSS:") * 1024; }
int64_t PeakRssBytes() { return StatusKiB("VmHWM:") * 1024; }

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// ProcessCpuSeconds() is the CPU time of all this process's threads. On a
// machine shared with other work the wall time of a phase stretches with
// the load; its CPU time does not, so the f16 row also reports CPU time
// against the memcpy's.
double ProcessCpuSeconds() {
  timespec now;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec + 1e-9 * now.tv_nsec;
}

std::string FilePath(const Flags& flags, const std::string& precision) {
  return flags.dir + "/kindling_load_bench_" + precision + ".safetensors";
}

int64_t FileSize(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 ? info.st_size : -1;
}

// Reads the file once so the page cache is warm.
void WarmPageCache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  std::vector<char> buffer(1 << 20);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
}

void Emit(const char* key, double value) {
  std::printf("%s %.9g\n", key, value);
}

void Check(const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "load_bench: %s\n",
                 std::string(status.message()).c_str());
    std::exit(1);
  }
}

// --- Phases (each in its own process) ----------------------------------------

int PhaseSave(const Flags& flags, kindling::Precision precision) {
  Model model = MakeModel(flags);
  Touch(model);  // eager: the values must exist to be saved
  const std::string path =
      FilePath(flags, std::string(kindling::PrecisionName(precision)));
  kindling::SaveOptions options;
  options.precision = precision;
  // Warm-up save (also creates the file), then the timed ones.
  Check(kindling::SaveModule(model, path, options));
  const int64_t rss_before = RssBytes();
  const int64_t tracked_before =
      kindling::GetMemoryStats(Device::Cpu()).live_bytes;
  kindling::ResetMemoryStats(Device::Cpu());
  double best = 1e30;
  for (int i = 0; i < flags.repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    Check(kindling::SaveModule(model, path, options));
    best = std::min(best, Seconds(start));
  }
  Emit("save_seconds", best);
  Emit(
      "save_peak_extra_tracked",
      kindling::GetMemoryStats(Device::Cpu()).peak_live_bytes - tracked_before);
  Emit("save_peak_extra_rss", PeakRssBytes() - rss_before);
  Emit("file_bytes", FileSize(path));
  return 0;
}

int PhaseLoad(const Flags& flags, const std::string& precision, bool eager) {
  const std::string path = FilePath(flags, precision);
  WarmPageCache(path);
  const int64_t rss_start = RssBytes();
  kindling::ResetMemoryStats(Device::Cpu());
  const auto construct_start = std::chrono::steady_clock::now();
  Model model = MakeModel(flags);
  if (eager) Touch(model);
  const double construct_seconds = Seconds(construct_start);
  const auto load_start = std::chrono::steady_clock::now();
  const double load_cpu_start = ProcessCpuSeconds();
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(model, path);
  Check(report.status());
  const double load_seconds = Seconds(load_start);
  const double load_cpu_seconds = ProcessCpuSeconds() - load_cpu_start;
  const int64_t peak_rss_after_load = PeakRssBytes();
  const int64_t tracked_after_load =
      kindling::GetMemoryStats(Device::Cpu()).peak_live_bytes;
  // First use: every page of every parameter is read once.
  const auto touch_start = std::chrono::steady_clock::now();
  const double checksum = Touch(model);
  const double touch_seconds = Seconds(touch_start);
  Emit("construct_seconds", construct_seconds);
  Emit("load_seconds", load_seconds);
  Emit("load_cpu_seconds", load_cpu_seconds);
  Emit("touch_seconds", touch_seconds);
  Emit("rss_start", rss_start);
  Emit("peak_rss_after_load", peak_rss_after_load);
  Emit("peak_rss_after_touch", PeakRssBytes());
  Emit("peak_tracked_after_load", tracked_after_load);
  Emit("peak_tracked", kindling::GetMemoryStats(Device::Cpu()).peak_live_bytes);
  Emit("borrowed", report->borrowed);
  Emit("copied", report->copied);
  Emit("checksum", checksum);
  return 0;
}

// --- BERT-base shapes in PyTorch layout ------------------------------------

using Bert = kindling::bench::BertBase;

Bert MakeBert(const Flags& flags) {
  using kindling::nn::EmbeddingConfig;
  using kindling::nn::LayerNormConfig;
  using kindling::nn::LinearConfig;
  const int64_t h = flags.bert_hidden;
  Bert bert{EmbeddingConfig{flags.bert_vocab, h}.Init(),
            EmbeddingConfig{512, h}.Init(),
            EmbeddingConfig{2, h}.Init(),
            LayerNormConfig{h}.Init(),
            {},
            LinearConfig{h, h}.Init()};
  for (int i = 0; i < flags.bert_layers; ++i) {
    bert.layers.push_back(kindling::bench::BertLayer{
        LinearConfig{h, h}.Init(), LinearConfig{h, h}.Init(),
        LinearConfig{h, h}.Init(), LinearConfig{h, h}.Init(),
        LayerNormConfig{h}.Init(), LinearConfig{h, 4 * h}.Init(),
        LinearConfig{4 * h, h}.Init(), LayerNormConfig{h}.Init()});
  }
  return bert;
}

// "torch": Hugging Face's layout through the PyTorch adapter (Linear
// weights [out, in], LayerNorm weight/bias); "kindling": Kindling's own.
std::string BertPath(const Flags& flags, const std::string& layout) {
  return flags.dir + "/kindling_load_bench_bert_" + layout + ".safetensors";
}

// BertForward() runs every layer once on `tokens` tokens: the embeddings,
// then per layer x = norm(x + out(q(x) + k(x) + v(x))) and
// x = norm(x + down(relu(up(x)))), then the pooler. Returns a checksum.
double BertForward(const Bert& bert, int64_t tokens) {
  kindling::NoGradGuard no_grad;
  std::vector<int64_t> ids(tokens), positions(tokens), types(tokens, 0);
  for (int64_t i = 0; i < tokens; ++i) {
    ids[i] = (i * 7919) % bert.word_embeddings.weight->dim(0);
    positions[i] = i % 512;
  }
  using Ids = Tensor<2, kindling::Int>;
  const Tensor<3> embedded =
      bert.word_embeddings.Forward(Ids::FromData<int64_t>(ids, {1, tokens})) +
      bert.position_embeddings.Forward(
          Ids::FromData<int64_t>(positions, {1, tokens})) +
      bert.token_type_embeddings.Forward(
          Ids::FromData<int64_t>(types, {1, tokens}));
  const int64_t hidden = embedded.dim(2);
  Tensor<2> x =
      bert.embeddings_norm.Forward(embedded).reshape<2>({tokens, hidden});
  for (const kindling::bench::BertLayer& layer : bert.layers) {
    const Tensor<2> mixed =
        layer.query.Forward(x) + layer.key.Forward(x) + layer.value.Forward(x);
    x = layer.attention_norm.Forward(x + layer.attention_output.Forward(mixed));
    x = layer.output_norm.Forward(
        x + layer.output.Forward(layer.intermediate.Forward(x).relu()));
  }
  return bert.pooler.Forward(x).to_data<float>()[0];
}

// TouchBert() reads one float per 4 KiB page of every parameter, wherever
// its strides put it: what a first use of every weight faults in.
double TouchBert(const Bert& bert) {
  double sum = 0;
  kindling::VisitParamsErased(bert, [&](const kindling::ParamView& param) {
    const TensorBase value = param.value();
    const float* data = value.data_as<float>();
    for (int64_t i = 0; i < value.numel(); i += 1024) sum += data[i];
  });
  return sum;
}

kindling::LoadOptions BertLoadOptions(const std::string& layout) {
  kindling::LoadOptions options;
  if (layout == "torch") options.pytorch = kindling::PyTorchAdapter{};
  return options;
}

int PhaseBertSave(const Flags& flags) {
  Bert bert = MakeBert(flags);  // saving initializes it
  Check(kindling::SaveModule(bert, BertPath(flags, "kindling")));
  kindling::SaveOptions torch_layout;
  torch_layout.pytorch = kindling::PyTorchAdapter{};
  Check(kindling::SaveModule(bert, BertPath(flags, "torch"), torch_layout));
  Emit("file_bytes", FileSize(BertPath(flags, "torch")));
  return 0;
}

// A lazy load of the `layout` file, then one forward pass, which reads every
// page of every weight but the embedding rows it does not look up.
int PhaseBertLoad(const Flags& flags, const std::string& layout) {
  const std::string path = BertPath(flags, layout);
  WarmPageCache(path);
  const int64_t rss_start = RssBytes();
  kindling::ResetMemoryStats(Device::Cpu());
  Bert bert = MakeBert(flags);
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(bert, path, BertLoadOptions(layout));
  Check(report.status());
  Emit("peak_rss_after_load", PeakRssBytes());
  Emit("checksum", TouchBert(bert));
  Emit("peak_rss_after_touch", PeakRssBytes());
  const auto start = std::chrono::steady_clock::now();
  Emit("checksum", BertForward(bert, flags.bert_tokens));
  Emit("first_forward_seconds", Seconds(start));
  Emit("rss_start", rss_start);
  Emit("peak_rss_after_forward", PeakRssBytes());
  Emit("borrowed_bytes", report->borrowed_bytes);
  Emit("copied_bytes", report->copied_bytes);
  Emit("borrowed_fraction", report->BorrowedFraction());
  Emit("peak_tracked", kindling::GetMemoryStats(Device::Cpu()).peak_live_bytes);
  return 0;
}

// Both layouts loaded in one process, forwards alternated: the median of
// each.
int PhaseBertForward(const Flags& flags) {
  Bert kindling_layout = MakeBert(flags);
  Bert torch_layout = MakeBert(flags);
  Check(kindling::LoadModule(kindling_layout, BertPath(flags, "kindling"),
                             BertLoadOptions("kindling"))
            .status());
  Check(kindling::LoadModule(torch_layout, BertPath(flags, "torch"),
                             BertLoadOptions("torch"))
            .status());
  // BLAS sums a transposed operand in another order: equal to rounding.
  const double want = BertForward(kindling_layout, flags.bert_tokens);
  const double got = BertForward(torch_layout, flags.bert_tokens);
  if (std::fabs(got - want) > 1e-3 * std::max(1.0, std::fabs(want))) {
    std::fprintf(stderr, "load_bench: the two layouts disagree\n");
    return 1;
  }
  std::vector<double> kindling_seconds, torch_seconds;
  for (int i = 0; i < 2 * flags.repetitions + 1; ++i) {
    for (auto [bert, times] : {std::pair{&kindling_layout, &kindling_seconds},
                               std::pair{&torch_layout, &torch_seconds}}) {
      const auto start = std::chrono::steady_clock::now();
      BertForward(*bert, flags.bert_tokens);
      times->push_back(Seconds(start));
    }
  }
  const auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  Emit("forward_kindling_layout", median(kindling_seconds));
  Emit("forward_torch_layout", median(torch_seconds));
  return 0;
}

// --- Driver
// --------------------------------------------------------------------

std::map<std::string, double> RunPhase(const Flags& flags,
                                       const std::string& phase) {
  char self[4096];
  const ssize_t length = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  self[length] = '\0';
  const std::string command =
      std::string(self) + " --phase=" + phase + " --dir=" + flags.dir +
      " --layers=" + std::to_string(flags.layers) +
      " --input=" + std::to_string(flags.input) +
      " --width=" + std::to_string(flags.width) +
      " --repetitions=" + std::to_string(flags.repetitions) +
      " --bert_layers=" + std::to_string(flags.bert_layers) +
      " --bert_hidden=" + std::to_string(flags.bert_hidden) +
      " --bert_vocab=" + std::to_string(flags.bert_vocab) +
      " --bert_tokens=" + std::to_string(flags.bert_tokens);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::map<std::string, double> values;
  char key[128];
  double value;
  while (std::fscanf(pipe, "%127s %lf", key, &value) == 2) values[key] = value;
  if (::pclose(pipe) != 0) {
    std::fprintf(stderr, "load_bench: phase %s failed\n", phase.c_str());
    std::exit(1);
  }
  return values;
}

// Best-of-N memcpy of `bytes` between two prefaulted buffers (one thread);
// `cpu_seconds`, if given, gets the best CPU time of the same copies.
double MemcpySeconds(int64_t bytes, int repetitions,
                     double* cpu_seconds = nullptr) {
  std::vector<char> source(bytes, 1), destination(bytes, 0);
  double best = 1e30;
  double best_cpu = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = ProcessCpuSeconds();
    std::memcpy(destination.data(), source.data(), bytes);
    best_cpu = std::min(best_cpu, ProcessCpuSeconds() - cpu_start);
    best = std::min(best, Seconds(start));
  }
  if (destination[bytes / 2] != 1) std::abort();
  if (cpu_seconds != nullptr) *cpu_seconds = best_cpu;
  return best;
}

// Best-of-N memcpy into a freshly allocated (not yet faulted) buffer: what a
// loader that copies the file into its own tensors pays at least.
double MemcpyFreshSeconds(int64_t bytes, int repetitions) {
  std::vector<char> source(bytes, 1);
  double best = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<char[]> destination(new char[bytes]);
    std::memcpy(destination.get(), source.data(), bytes);
    best = std::min(best, Seconds(start));
    if (destination[bytes / 2] != 1) std::abort();
  }
  return best;
}

// Best-of-N f16 -> f32 conversion of `count` elements into a prefaulted
// buffer, on one thread: the conversion alone, without the page faults a
// load pays for its fresh tensors. `vectorized` picks ConvertFloatSpan (what
// loads use) or the scalar reference loop over HalfBitsToFloat (what the
// checkpoint reader ran before it shared ConvertFloatSpan).
double ConvertHalfSeconds(int64_t count, int repetitions, bool vectorized) {
  std::vector<uint16_t> source(count);
  for (int64_t i = 0; i < count; ++i) {
    source[i] = kindling::FloatToHalfBits(static_cast<float>(i % 4096) / 64);
  }
  std::vector<float> destination(count, -1.0f);
  double best = 1e30;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (vectorized) {
      kindling::ConvertFloatSpan(destination.data(), kindling::DType::kF32,
                                 source.data(), kindling::DType::kF16, count);
    } else {
      for (int64_t j = 0; j < count; ++j) {
        destination[j] = kindling::HalfBitsToFloat(source[j]);
      }
      // Keep gcc from proving the loop's result unused across repetitions.
      asm volatile("" : : "r"(destination.data()) : "memory");
    }
    best = std::min(best, Seconds(start));
  }
  if (destination[count - 1] != kindling::HalfBitsToFloat(source[count - 1])) {
    std::abort();
  }
  return best;
}

double MiB(double bytes) { return bytes / (1024.0 * 1024.0); }

void ReportBert(const Flags& flags) {
  const auto save = RunPhase(flags, "bert_save");
  const auto load = RunPhase(flags, "bert_load_torch");
  const auto load_kindling = RunPhase(flags, "bert_load_kindling");
  const auto forward = RunPhase(flags, "bert_forward");
  const double file_bytes = save.at("file_bytes");
  std::printf(
      "\nBERT-base shapes (%d layers, hidden %lld, vocab %lld), "
      "PyTorch-layout safetensors %.1f MiB:\n",
      flags.bert_layers, static_cast<long long>(flags.bert_hidden),
      static_cast<long long>(flags.bert_vocab), MiB(file_bytes));
  std::printf(
      "  borrowed_fraction %.4f (%.1f MiB borrowed, %.1f MiB copied)   "
      "goal >= 0.99\n",
      load.at("borrowed_fraction"), MiB(load.at("borrowed_bytes")),
      MiB(load.at("copied_bytes")));
  const auto rss = [&](const std::map<std::string, double>& phase,
                       const char* key) {
    return (phase.at(key) - phase.at("rss_start")) / file_bytes;
  };
  std::printf(
      "  +RSS/file, lazy load: %.3fx; + first read of every page: %.3fx   "
      "goal <= 1.02x\n"
      "  +RSS/file after the first forward: %.3fx (Kindling-layout file: "
      "%.3fx; peak Kindling-allocated tensors %.3fx)\n",
      rss(load, "peak_rss_after_load"), rss(load, "peak_rss_after_touch"),
      rss(load, "peak_rss_after_forward"),
      rss(load_kindling, "peak_rss_after_forward"),
      load.at("peak_tracked") / file_bytes);
  std::printf(
      "  forward, %lld tokens (median of %d): PyTorch layout %.1f ms, "
      "Kindling layout %.1f ms: %.3fx   goal <= 1.02x\n",
      static_cast<long long>(flags.bert_tokens), 2 * flags.repetitions + 1,
      forward.at("forward_torch_layout") * 1e3,
      forward.at("forward_kindling_layout") * 1e3,
      forward.at("forward_torch_layout") /
          forward.at("forward_kindling_layout"));
  std::remove(BertPath(flags, "kindling").c_str());
  std::remove(BertPath(flags, "torch").c_str());
}

int Drive(const Flags& flags) {
  const auto save = RunPhase(flags, "save_f32");
  const auto save16 = RunPhase(flags, "save_f16");
  const double file_bytes = save.at("file_bytes");
  const auto lazy = RunPhase(flags, "lazy_load");
  const auto eager = RunPhase(flags, "eager_load");
  const auto lazy16 = RunPhase(flags, "lazy_load_f16");
  double memcpy_cpu_seconds = 0;
  const double memcpy_seconds = MemcpySeconds(
      static_cast<int64_t>(file_bytes), flags.repetitions, &memcpy_cpu_seconds);
  const double memcpy_fresh_seconds =
      MemcpyFreshSeconds(static_cast<int64_t>(file_bytes), flags.repetitions);
  const int64_t elements = static_cast<int64_t>(file_bytes) / 4;
  const double convert_seconds =
      ConvertHalfSeconds(elements, flags.repetitions, /*vectorized=*/true);
  const double convert_scalar_seconds =
      ConvertHalfSeconds(elements, flags.repetitions, /*vectorized=*/false);

  std::printf(
      "load_bench: %d Linear layers (%lld->%lld, then %lldx%lld), "
      "f32 file %.1f MiB (%.0f bytes)\n",
      flags.layers, static_cast<long long>(flags.input),
      static_cast<long long>(flags.width), static_cast<long long>(flags.width),
      static_cast<long long>(flags.width), MiB(file_bytes), file_bytes);
  std::printf(
      "memcpy of the file's bytes: %.1f ms (%.2f GB/s); into a fresh "
      "buffer (page faults included): %.1f ms (%.2fx)\n\n",
      memcpy_seconds * 1e3, file_bytes / memcpy_seconds / 1e9,
      memcpy_fresh_seconds * 1e3, memcpy_fresh_seconds / memcpy_seconds);
  std::printf("%-36s %9s %9s %9s %9s %9s %9s %9s\n", "phase", "time ms",
              "/memcpy", "/fresh", "peak RSS", "RSS/file", "+RSS/file",
              "trk/file");
  auto row = [&](const char* name, double seconds, double peak_rss,
                 double base_rss, double tracked) {
    std::printf("%-36s %9.1f %8.2fx %8.2fx %6.1fMiB %8.3fx %8.3fx %8.3fx\n",
                name, seconds * 1e3, seconds / memcpy_seconds,
                seconds / memcpy_fresh_seconds, MiB(peak_rss),
                peak_rss / file_bytes, (peak_rss - base_rss) / file_bytes,
                tracked / file_bytes);
  };
  row("lazy construct + load (f32)", lazy.at("load_seconds"),
      lazy.at("peak_rss_after_load"), lazy.at("rss_start"),
      lazy.at("peak_tracked_after_load"));
  row("  ... + first read of every page",
      lazy.at("load_seconds") + lazy.at("touch_seconds"),
      lazy.at("peak_rss_after_touch"), lazy.at("rss_start"),
      lazy.at("peak_tracked"));
  row("eager construct (init) + load", eager.at("load_seconds"),
      eager.at("peak_rss_after_touch"), eager.at("rss_start"),
      eager.at("peak_tracked"));
  row("lazy load f16 file -> f32 (convert)", lazy16.at("load_seconds"),
      lazy16.at("peak_rss_after_touch"), lazy16.at("rss_start"),
      lazy16.at("peak_tracked"));
  std::printf(
      "  (its CPU time, all threads: %.1f ms = %.2fx the memcpy's %.1f ms)\n",
      lazy16.at("load_cpu_seconds") * 1e3,
      lazy16.at("load_cpu_seconds") / memcpy_cpu_seconds,
      memcpy_cpu_seconds * 1e3);
  auto kernel_row = [&](const char* name, double seconds) {
    std::printf("%-36s %9.1f %8.2fx %8.2fx %9s %9s %9s %9s\n", name,
                seconds * 1e3, seconds / memcpy_seconds,
                seconds / memcpy_fresh_seconds, "-", "-", "-", "-");
  };
  kernel_row("  f16->f32 kernel, prefaulted out", convert_seconds);
  kernel_row("  f16->f32 scalar loop, prefaulted", convert_scalar_seconds);
  auto save_row = [&](const char* name,
                      const std::map<std::string, double>& phase) {
    std::printf("%-36s %9.1f %8.2fx %8.2fx %9s %9s %8.3fx %8.3fx\n", name,
                phase.at("save_seconds") * 1e3,
                phase.at("save_seconds") / memcpy_seconds,
                phase.at("save_seconds") / memcpy_fresh_seconds, "-", "-",
                phase.at("save_peak_extra_rss") / file_bytes,
                phase.at("save_peak_extra_tracked") / file_bytes);
  };
  save_row("save f32 (tmp + fsync + rename)", save);
  save_row("save f16 (convert in chunks)", save16);
  std::printf(
      "\nlazy load: %.0f tensors borrowed, %.0f copied; eager construct took "
      "%.1f ms.\n"
      "/memcpy, /fresh: time over a memcpy of the file's bytes into a "
      "prefaulted / a fresh buffer.\n"
      "RSS/file: the phase's peak RSS (VmHWM, whole process) over the f32 "
      "file size; +RSS/file: the\npeak minus the RSS before construction "
      "(save rows: extra peak during the timed saves).\n"
      "trk/file: peak Kindling-allocated tensor bytes (MemoryStats; save "
      "rows: extra over the model).\n"
      "f16->f32 kernel / scalar loop: converting the model's elements on one "
      "thread into a prefaulted\nbuffer with ConvertFloatSpan / a "
      "HalfBitsToFloat loop: the conversion's own cost, no page faults.\n"
      "Goals: lazy load memory <= 1.02x file, load time <= 2x memcpy.\n",
      lazy.at("borrowed"), lazy.at("copied"),
      eager.at("construct_seconds") * 1e3);
  std::remove(FilePath(flags, "f32").c_str());
  std::remove(FilePath(flags, "f16").c_str());
  ReportBert(flags);
  return 0;
}

}  // namespace bench

int main(int argc, char** argv) {
  bench::Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string("--") + name + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char* v = value("phase")) {
      flags.phase = v;
    } else if (const char* v = value("dir")) {
      flags.dir = v;
    } else if (const char* v = value("layers")) {
      flags.layers = std::atoi(v);
    } else if (const char* v = value("input")) {
      flags.input = std::atoll(v);
    } else if (const char* v = value("width")) {
      flags.width = std::atoll(v);
    } else if (const char* v = value("repetitions")) {
      flags.repetitions = std::atoi(v);
    } else if (const char* v = value("bert_layers")) {
      flags.bert_layers = std::atoi(v);
    } else if (const char* v = value("bert_hidden")) {
      flags.bert_hidden = std::atoll(v);
    } else if (const char* v = value("bert_vocab")) {
      flags.bert_vocab = std::atoll(v);
    } else if (const char* v = value("bert_tokens")) {
      flags.bert_tokens = std::atoll(v);
    } else {
      std::fprintf(stderr,
                   "usage: load_bench [--layers=N] [--input=N] [--width=N] "
                   "[--dir=D] [--repetitions=N] [--bert_layers=N] "
                   "[--bert_hidden=N] [--bert_vocab=N] [--bert_tokens=N]\n");
      return 2;
    }
  }
  if (const char* tmp = std::getenv("TEST_TMPDIR");
      tmp && flags.phase.empty() && flags.dir == "/tmp") {
    flags.dir = tmp;
  }
  if (flags.phase.empty()) return bench::Drive(flags);
  if (flags.phase == "save_f32") {
    return bench::PhaseSave(flags, kindling::Precision::kF32);
  }
  if (flags.phase == "save_f16") {
    return bench::PhaseSave(flags, kindling::Precision::kF16);
  }
  if (flags.phase == "lazy_load") return bench::PhaseLoad(flags, "f32", false);
  if (flags.phase == "eager_load") return bench::PhaseLoad(flags, "f32", true);
  if (flags.phase == "lazy_load_f16") {
    return bench::PhaseLoad(flags, "f16", false);
  }
  if (flags.phase == "bert_save") return bench::PhaseBertSave(flags);
  if (flags.phase == "bert_load_torch") {
    return bench::PhaseBertLoad(flags, "torch");
  }
  if (flags.phase == "bert_load_kindling") {
    return bench::PhaseBertLoad(flags, "kindling");
  }
  if (flags.phase == "bert_forward") return bench::PhaseBertForward(flags);
  std::fprintf(stderr, "load_bench: unknown phase %s\n", flags.phase.c_str());
  return 2;
}
