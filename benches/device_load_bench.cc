// device_load_bench: the host memory a checkpoint load into a device module
// allocates, against the file size and the largest tensor, and its speed
// against a memcpy of the file's bytes, all measured in the same run.
//
//   tools/bazel run //benches:device_load_bench -- --benchmark_repetitions=5
//   tools/bazel run --config=cuda //benches:device_load_bench   # a real GPU
//
// The model is kindling::bench::Deep with 8 Linear 2048 -> 2048 layers
// (33.6M f32 parameters, 128 MiB), saved once as f32 and once as f16. Each
// iteration loads the file into a fresh lazy module on cuda:0 (io/
// device_read.h: mapped file -> device in 8 MiB chunks, converted in one
// host staging tensor when the dtypes differ).
//
// Counters:
//   host_peak_bytes      CPU tensor bytes allocated at the peak of the load
//                        (MemoryStats), the staging chunk included;
//   host_peak_per_file   that over the file size (goal: one 8 MiB chunk at
//                        most, not the model; 0 for an f32 file, whose
//                        chunks go from the mapped pages to the device);
//   host_peak_per_tensor that over the largest tensor (16 MiB);
//   ratio_vs_memcpy      memcpy time of the file's bytes over the load time;
//   ratio_vs_pcie        (--config=cuda only) the time of one host-to-device
//                        cudaMemcpy of the file's bytes from pinned memory,
//                        the PCIe bound, over the load time; pcie_gb_s is
//                        that copy's bandwidth.
// Without --config=cuda the device is the fake cuda device of the tests
// (tests/support/fake_cuda.h: host memory, so a "copy to the device" is a
// memcpy); with it, the real GPU, where the time includes PCIe transfers.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if KINDLING_BENCH_CUDA
#include <cuda_runtime.h>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#endif
#include "absl/status/status.h"
#include "benches/bench_models.kindling.h"
#include "benchmark/benchmark.h"
#include "kindling/io/module_file.h"
#include "kindling/io/options.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/device_memory.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace {

using kindling::Device;
using Model = kindling::bench::Deep;

constexpr int kLayers = 8;
constexpr int64_t kWidth = 2048;
constexpr int64_t kLargestTensorBytes = kWidth * kWidth * 4;

Model MakeModel(const Device& device) {
  kindling::SetInitSeed(5);
  Model model;
  for (int i = 0; i < kLayers; ++i) {
    model.layers.push_back(
        kindling::nn::LinearConfig{kWidth, kWidth}.Init(device));
  }
  return model;
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// The checkpoint at `precision`, written once per process.
const std::string& CheckpointPath(kindling::Precision precision) {
  static std::string paths[3];
  std::string& path = paths[static_cast<int>(precision)];
  if (path.empty()) {
    path = TempDir() + "/kindling_device_load_bench_" +
           std::string(kindling::PrecisionName(precision)) + ".safetensors";
    const Model model = MakeModel(Device::Cpu());
    kindling::SaveOptions options;
    options.precision = precision;
    const absl::Status saved = kindling::SaveModule(model, path, options);
    if (!saved.ok()) {
      std::fprintf(stderr, "device_load_bench: %s\n", saved.ToString().c_str());
      std::exit(1);
    }
  }
  return path;
}

int64_t FileBytes(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "rb");
  std::fseek(file, 0, SEEK_END);
  const int64_t size = std::ftell(file);
  std::fclose(file);
  return size;
}

// Seconds one memcpy of `bytes` takes (the best of three), the peer.
double MemcpySeconds(int64_t bytes) {
  std::vector<char> source(bytes, 1);
  std::vector<char> target(bytes);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(target.data(), source.data(), bytes);
    benchmark::DoNotOptimize(target.data());
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  return best;
}

#if KINDLING_BENCH_CUDA
// Seconds one pinned host-to-device copy of `bytes` to cuda:0 takes (the
// best of three): what PCIe allows the load.
double PcieSeconds(int64_t bytes) {
  void* host = nullptr;
  void* device = nullptr;
  KINDLING_CUDA_CHECK(cudaSetDevice(0));
  KINDLING_CUDA_CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
  KINDLING_CUDA_CHECK(cudaMalloc(&device, bytes));
  std::memset(host, 1, bytes);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    KINDLING_CUDA_CHECK(
        cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
    best = std::min(best, std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  }
  KINDLING_CUDA_CHECK(cudaFree(device));
  KINDLING_CUDA_CHECK(cudaFreeHost(host));
  return best;
}
#endif

void BM_LoadIntoDevice(benchmark::State& state) {
#if KINDLING_BENCH_CUDA
  if (const kindling::cuda::GpuCheck gpu = kindling::cuda::CheckCudaDevices(1);
      gpu.verdict != kindling::cuda::GpuVerdict::kRun) {
    // Reported as an error either way: the GPU runner fails on any.
    state.SkipWithError(("the load was not run: " + gpu.message).c_str());
    return;
  }
#endif
  const auto precision = static_cast<kindling::Precision>(state.range(0));
  const std::string& path = CheckpointPath(precision);
  const int64_t file_bytes = FileBytes(path);
  int64_t host_peak = 0;
  double seconds = 0;
  for (auto _ : state) {
    Model model = MakeModel(Device::Cuda(0));
    kindling::ResetMemoryStats(Device::Cpu());
    const int64_t before = kindling::GetMemoryStats(Device::Cpu()).live_bytes;
    const auto start = std::chrono::steady_clock::now();
    const absl::StatusOr<kindling::LoadReport> report =
        kindling::LoadModule(model, path);
    // Copies still queued on the device belong to the load.
    const absl::Status synced =
        kindling::GetDeviceMemory(Device::Cuda(0)).Synchronize(Device::Cuda(0));
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!report.ok() || !synced.ok()) {
      state.SkipWithError(
          (report.ok() ? synced : report.status()).ToString().c_str());
      return;
    }
    host_peak = std::max(
        host_peak,
        kindling::GetMemoryStats(Device::Cpu()).peak_live_bytes - before);
  }
  const double load_seconds = seconds / state.iterations();
  state.counters["file_bytes"] = static_cast<double>(file_bytes);
  state.counters["host_peak_bytes"] = static_cast<double>(host_peak);
  state.counters["host_peak_per_file"] =
      static_cast<double>(host_peak) / file_bytes;
  state.counters["host_peak_per_tensor"] =
      static_cast<double>(host_peak) / kLargestTensorBytes;
  state.counters["load_ms"] = load_seconds * 1e3;
  state.counters["ratio_vs_memcpy"] = MemcpySeconds(file_bytes) / load_seconds;
#if KINDLING_BENCH_CUDA
  const double pcie_seconds = PcieSeconds(file_bytes);
  state.counters["pcie_gb_s"] = file_bytes / pcie_seconds * 1e-9;
  state.counters["ratio_vs_pcie"] = pcie_seconds / load_seconds;
#endif
}
BENCHMARK(BM_LoadIntoDevice)
    ->Arg(static_cast<int>(kindling::Precision::kF32))
    ->Arg(static_cast<int>(kindling::Precision::kF16))
    ->ArgName("precision_f32_0_f16_1")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
