// DataLoader throughput against a plain memcpy of the same bytes, and against
// the rate training consumes samples at, each measured in the same run:
//
//   BM_Loader/<batch>/<shuffle>/<prefetch>
//       samples/s the consumer receives from Next() on a Fashion-MNIST-sized
//       data set (60000 x 784 f32, synthetic). `vs_memcpy`: loader bytes/s /
//       memcpy bytes/s, the memcpy copying the same batch bytes (images and
//       labels) out of a same-sized buffer, as many batches, right after
//       the loader's loop. `vs_training`: samples/s / 20000, the
//       upper end of the MLP's training rate; above 1 the loader keeps up
//       with training even with no thread to hide behind.
//   BM_LoaderBehindTraining/<batch>/<spin>
//       the consumer "trains" for batch / 20000 s per batch, spinning (spin:1,
//       CPU training, which competes with the loader's thread for cores) or
//       sleeping (spin:0, a host waiting on a GPU); `stall_fraction` is the
//       share of the run spent waiting in Next() (0 = the background thread
//       always had the batch ready).
//   BM_LoadFashionMnistTrain
//       LoadMnistLike(kTrain) from /usr/share/datasets/fashion-mnist;
//       `vs_gunzip`: the time zlib alone takes to decompress both files /
//       load time (1 = reading, checking and normalizing cost nothing extra).
//
//   tools/bazel run //benches:data_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "kindling/data/data_loader.h"
#include "kindling/data/mnist.h"
#include "kindling/tensor/tensor.h"

namespace kindling::data {
namespace {

constexpr int64_t kSamples = 60000;
constexpr int64_t kImageSize = 784;
constexpr double kTrainingSamplesPerSecond = 20000;

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

const ImageDataset& SyntheticDataset() {
  static const ImageDataset* dataset = [] {
    std::vector<float> pixels(kSamples * kImageSize);
    for (size_t i = 0; i < pixels.size(); ++i) {
      pixels[i] = static_cast<float>(i % 251) / 251.0f;
    }
    std::vector<int64_t> labels(kSamples);
    for (int64_t i = 0; i < kSamples; ++i) labels[i] = i % 10;
    auto* result = new ImageDataset;
    result->images = Tensor<2>::FromData(pixels, {kSamples, kImageSize});
    result->labels = Tensor<1, Int>::FromData(labels, {kSamples});
    result->rows = 28;
    result->cols = 28;
    return result;
  }();
  return *dataset;
}

// MemcpyPeer copies a batch's bytes (B image rows and B labels) from
// consecutive places in a copy of the data set into a pre-faulted buffer.
class MemcpyPeer {
 public:
  explicit MemcpyPeer(int64_t batch_size)
      : batch_size_(batch_size),
        images_(kSamples * kImageSize, 0.5f),
        labels_(kSamples, 3),
        image_out_(batch_size * kImageSize, 0),
        label_out_(batch_size, 0) {}

  // Copy() copies one batch and returns its seconds.
  double Copy() {
    if (next_ + batch_size_ > kSamples) next_ = 0;
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(image_out_.data(), images_.data() + next_ * kImageSize,
                batch_size_ * kImageSize * sizeof(float));
    std::memcpy(label_out_.data(), labels_.data() + next_,
                batch_size_ * sizeof(int64_t));
    benchmark::ClobberMemory();
    next_ += batch_size_;
    return Seconds(std::chrono::steady_clock::now() - start);
  }

 private:
  int64_t batch_size_;
  int64_t next_ = 0;
  std::vector<float> images_;
  std::vector<int64_t> labels_;
  std::vector<float> image_out_;
  std::vector<int64_t> label_out_;
};

void BM_Loader(benchmark::State& state) {
  const DataLoaderOptions options{
      .batch_size = state.range(0),
      .shuffle = state.range(1) != 0,
      .seed = 1,
      .prefetch_batches = static_cast<int>(state.range(2))};
  DataLoader loader(SyntheticDataset(), options);
  int64_t samples = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    std::optional<Batch> batch = loader.Next();
    if (!batch.has_value()) batch = loader.Next();  // next epoch
    benchmark::DoNotOptimize(batch->images.base().data());
    samples += batch->size();
  }
  const double loader_rate =
      samples / Seconds(std::chrono::steady_clock::now() - start);
  // The peer copies as many batches right after (interleaving would let the
  // background thread work while the peer's copy is timed).
  MemcpyPeer peer(options.batch_size);
  double peer_seconds = 0;
  const int64_t peer_batches = std::min<int64_t>(state.iterations(), 20000);
  for (int64_t i = 0; i < peer_batches; ++i) peer_seconds += peer.Copy();
  const double peer_rate = peer_batches * options.batch_size / peer_seconds;
  state.SetItemsProcessed(samples);
  state.counters["samples_per_s"] = loader_rate;
  state.counters["vs_memcpy"] = loader_rate / peer_rate;
  state.counters["vs_training"] = loader_rate / kTrainingSamplesPerSecond;
}
BENCHMARK(BM_Loader)
    ->ArgNames({"batch", "shuffle", "prefetch"})
    ->Args({64, 1, 2})
    ->Args({64, 1, 0})
    ->Args({64, 0, 2})
    ->Args({256, 1, 2})
    ->UseRealTime();

void BM_LoaderBehindTraining(benchmark::State& state) {
  const int64_t batch_size = state.range(0);
  const bool spin = state.range(1) != 0;
  DataLoader loader(SyntheticDataset(), {.batch_size = batch_size, .seed = 1});
  const auto step =
      std::chrono::duration<double>(batch_size / kTrainingSamplesPerSecond);
  double waiting = 0;
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::optional<Batch> batch = loader.Next();
    if (!batch.has_value()) batch = loader.Next();
    const auto received = std::chrono::steady_clock::now();
    // "Train" for as long as the MLP would take on this batch: spinning
    // like CPU training, or sleeping like a host waiting on a GPU.
    if (spin) {
      while (std::chrono::steady_clock::now() - received < step) {
      }
    } else {
      std::this_thread::sleep_for(step);
    }
    waiting += Seconds(received - start);
    total += Seconds(std::chrono::steady_clock::now() - start);
  }
  state.counters["stall_fraction"] = waiting / total;
}
BENCHMARK(BM_LoaderBehindTraining)
    ->ArgNames({"batch", "spin"})
    ->Args({64, 1})
    ->Args({64, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// GunzipSeconds() is the time zlib alone takes to decompress `path`.
double GunzipSeconds(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return 0;
  gzbuffer(file, 256 << 10);
  std::vector<char> buffer(1 << 20);
  while (gzread(file, buffer.data(), buffer.size()) > 0) {
  }
  gzclose(file);
  return Seconds(std::chrono::steady_clock::now() - start);
}

void BM_LoadFashionMnistTrain(benchmark::State& state) {
  const std::string directory(kFashionMnistDirectory);
  double load_seconds = 0;
  double gunzip_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ImageDataset> train = LoadMnistLike(MnistSplit::kTrain);
    load_seconds += Seconds(std::chrono::steady_clock::now() - start);
    if (!train.ok()) {
      state.SkipWithError(std::string(train.status().message()).c_str());
      return;
    }
    state.PauseTiming();
    train = absl::InternalError("freed");
    gunzip_seconds += GunzipSeconds(directory + "/train-images-idx3-ubyte.gz") +
                      GunzipSeconds(directory + "/train-labels-idx1-ubyte.gz");
    state.ResumeTiming();
  }
  state.counters["vs_gunzip"] = gunzip_seconds / load_seconds;
}
BENCHMARK(BM_LoadFashionMnistTrain)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kindling::data

BENCHMARK_MAIN();
