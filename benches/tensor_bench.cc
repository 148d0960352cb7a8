// Tensor kernels against their limits, each measured in the same run:
//
//   BM_AddF32        16M-element a + b   `ratio_vs_memcpy`: GB/s (2 reads + 1
//                                        write) / memcpy GB/s (1 read + 1
//                                        write) of a 64 MiB buffer. Goal >=
//                                        0.7.
//   BM_MatmulF32     1024^3 matmul()     `ratio_vs_sgemm`: cblas_sgemm time on
//                                        the same buffers / matmul time.
//                                        Goal >= 0.95.
//   BM_SumF32        16M-element sum()   `ratio_vs_memcpy`: read GB/s / memcpy
//                                        GB/s (memory bandwidth).
//   BM_SoftmaxF32    softmax(1) of [4096, 1024]  `ratio_vs_memcpy` as above
//                                        (1 read + 1 write).
//   BM_AddSmallF32   a + b of 16..16K floats: time per op (dispatch cost).
// Each ratio's peer runs interleaved with the op inside the same benchmark
// (one peer call after every iteration, timer paused), so both see the same
// machine load; BM_Memcpy and BM_CblasSgemm also run alone for reference.
//
//   tools/bazel run //benches:tensor_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr int64_t kElements = int64_t{16} << 20;  // 16M f32 = 64 MiB
constexpr int64_t kBytes = kElements * sizeof(float);
constexpr int kMatmulSize = 1024;

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

// MemcpyPeer is the bandwidth limit: a 64 MiB memcpy between pre-faulted
// buffers. Benchmarks time one copy after each iteration of their op (with
// the benchmark timer paused), so op and peer share the machine's
// conditions; a ratio is (op bytes / op time) / (copy bytes / copy time) over
// all iterations of the run. Copy bytes count the read and the write.
class MemcpyPeer {
 public:
  MemcpyPeer() : source_(kBytes, 1), target_(kBytes, 0) {}

  // Copy() runs one copy and returns its seconds.
  double Copy() {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(target_.data(), source_.data(), kBytes);
    benchmark::ClobberMemory();
    return Seconds(std::chrono::steady_clock::now() - start);
  }
  static constexpr double kBytesPerCopy = 2.0 * kBytes;

 private:
  std::vector<char> source_;
  std::vector<char> target_;
};

// Runs `op` per iteration and reports its GB/s over `bytes_per_op`, the
// interleaved memcpy GB/s and their ratio.
template <class Op>
void MeasureBandwidth(benchmark::State& state, double bytes_per_op, Op op) {
  MemcpyPeer peer;
  peer.Copy();  // warm up
  op();
  double op_seconds = 0;
  double peer_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    op();
    op_seconds += Seconds(std::chrono::steady_clock::now() - start);
    state.PauseTiming();
    peer_seconds += peer.Copy();
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  const double rate = bytes_per_op * iterations / op_seconds;
  const double peer_rate =
      MemcpyPeer::kBytesPerCopy * iterations / peer_seconds;
  state.counters["GB/s"] = rate / 1e9;
  state.counters["memcpy_GB/s"] = peer_rate / 1e9;
  state.counters["ratio_vs_memcpy"] = rate / peer_rate;
}

// The peer alone, for reference.
void BM_Memcpy(benchmark::State& state) {
  MemcpyPeer peer;
  peer.Copy();
  for (auto _ : state) peer.Copy();
  state.counters["GB/s"] =
      benchmark::Counter(MemcpyPeer::kBytesPerCopy * state.iterations() / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AddF32(benchmark::State& state) {
  const auto a = Tensor<1>::Full({kElements}, 1.0);
  const auto b = Tensor<1>::Full({kElements}, 2.0);
  MeasureBandwidth(state, 3.0 * kBytes, [&] {
    Tensor<1> c = a + b;
    benchmark::DoNotOptimize(c.base().data());
  });
}
BENCHMARK(BM_AddF32)->Unit(benchmark::kMillisecond)->UseRealTime();

// Tiny ops must stay cheap: they run serially, without waking threads.
// Reports nanoseconds per a + b for a few sizes (no peer).
void BM_AddSmallF32(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto a = Tensor<1>::Full({n}, 1.0);
  const auto b = Tensor<1>::Full({n}, 2.0);
  for (auto _ : state) {
    Tensor<1> c = a + b;
    benchmark::DoNotOptimize(c.base().data());
  }
}
BENCHMARK(BM_AddSmallF32)->Arg(16)->Arg(1024)->Arg(16384);

void BM_SumF32(benchmark::State& state) {
  const auto a = Tensor<1>::Full({kElements}, 1.0);
  MeasureBandwidth(state, 1.0 * kBytes, [&] {
    Tensor<0> sum = a.sum();
    benchmark::DoNotOptimize(sum.base().data());
  });
}
BENCHMARK(BM_SumF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SoftmaxF32(benchmark::State& state) {
  Generator generator(1);
  const auto x = Tensor<2>::RandomNormal({4096, 1024}, generator);
  MeasureBandwidth(state, 2.0 * x.numel() * sizeof(float), [&] {
    Tensor<2> y = x.softmax(1);
    benchmark::DoNotOptimize(y.base().data());
  });
}
BENCHMARK(BM_SoftmaxF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CblasSgemm(benchmark::State& state) {
  const int n = kMatmulSize;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CblasSgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

// matmul() against cblas_sgemm on the same operands, interleaved.
void BM_MatmulF32(benchmark::State& state) {
  const int n = kMatmulSize;
  const auto a = Tensor<2>::Full({n, n}, 0.5);
  const auto b = Tensor<2>::Full({n, n}, 0.25);
  std::vector<float> c(n * n, 0.0f);
  auto sgemm = [&] {
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.base().data_as<const float>(), n,
                b.base().data_as<const float>(), n, 0.0f, c.data(), n);
    benchmark::ClobberMemory();
    return Seconds(std::chrono::steady_clock::now() - start);
  };
  sgemm();  // warm up
  (void)matmul(a, b);
  double matmul_seconds = 0;
  double sgemm_seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    Tensor<2> product = matmul(a, b);
    benchmark::DoNotOptimize(product.base().data());
    matmul_seconds += Seconds(std::chrono::steady_clock::now() - start);
    state.PauseTiming();
    sgemm_seconds += sgemm();
    state.ResumeTiming();
  }
  const double flops = 2.0 * n * n * n * state.iterations();
  state.counters["GFLOP/s"] = flops / matmul_seconds / 1e9;
  state.counters["sgemm_GFLOP/s"] = flops / sgemm_seconds / 1e9;
  state.counters["ratio_vs_sgemm"] = sgemm_seconds / matmul_seconds;
}
BENCHMARK(BM_MatmulF32)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kindling

BENCHMARK_MAIN();
