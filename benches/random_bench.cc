// Random fills and dropout against their limits and against the host path
// they replaced, each measured in the same run:
//
//   BM_FillUniformF32    16M f32 RandomUniform   `ratio_vs_memcpy`: written
//   BM_FillNormalF32     16M f32 RandomNormal    GB/s / memcpy GB/s (read +
//                                                write) of a 64 MiB buffer.
//   BM_FillUniformF32Host  the same fill the old way (xoshiro doubles on the
//                        host, uploaded as f64, converted): `ratio_vs_memcpy`
//                        and `allocations` per fill.
//   BM_Dropout/R/C       dropout(p = 0.1) of an [R, C] f32 tensor, training
//                        mode: `fused_ms` (ops::Dropout, one pass) and
//                        `host_ms` (the old uniform + compare + where path),
//                        interleaved, `speedup` = host / fused, and tensor
//                        `fused_allocations` / `host_allocations` per call.
//
//   tools/bazel run //benches:random_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

constexpr int64_t kElements = int64_t{16} << 20;  // 16M f32 = 64 MiB
constexpr int64_t kBytes = kElements * sizeof(float);

double Seconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

template <class F>
double TimeSeconds(const F& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return Seconds(std::chrono::steady_clock::now() - start);
}

// MemcpyPeer: a 64 MiB memcpy between pre-faulted buffers, timed after each
// iteration of the op (benchmark timer paused) so both see the same load.
class MemcpyPeer {
 public:
  MemcpyPeer() : source_(kBytes, 1), target_(kBytes, 0) {}

  double Copy() {
    return TimeSeconds([&] {
      std::memcpy(target_.data(), source_.data(), kBytes);
      benchmark::ClobberMemory();
    });
  }
  static constexpr double kBytesPerCopy = 2.0 * kBytes;

 private:
  std::vector<char> source_;
  std::vector<char> target_;
};

// Tensor storages `op` allocates, counted once outside the timed loop.
template <class Op>
int64_t AllocationsOf(const Op& op) {
  ResetMemoryStats(Device::Cpu());
  op();
  return GetMemoryStats(Device::Cpu()).allocation_count;
}

template <class Op>
void MeasureFill(benchmark::State& state, const Op& op) {
  MemcpyPeer peer;
  peer.Copy();
  state.counters["allocations"] = static_cast<double>(AllocationsOf(op));
  double op_seconds = 0;
  double peer_seconds = 0;
  for (auto _ : state) {
    op_seconds += TimeSeconds(op);
    state.PauseTiming();
    peer_seconds += peer.Copy();
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  const double rate = kBytes * iterations / op_seconds;
  const double peer_rate =
      MemcpyPeer::kBytesPerCopy * iterations / peer_seconds;
  state.counters["GB/s"] = rate / 1e9;
  state.counters["memcpy_GB/s"] = peer_rate / 1e9;
  state.counters["ratio_vs_memcpy"] = rate / peer_rate;
}

void BM_FillUniformF32(benchmark::State& state) {
  PhiloxGenerator generator(1);
  MeasureFill(state, [&] {
    Tensor<1> x = Tensor<1>::RandomUniform({kElements}, generator);
    benchmark::DoNotOptimize(x.base().data());
  });
}
BENCHMARK(BM_FillUniformF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FillNormalF32(benchmark::State& state) {
  PhiloxGenerator generator(1);
  MeasureFill(state, [&] {
    Tensor<1> x = Tensor<1>::RandomNormal({kElements}, generator);
    benchmark::DoNotOptimize(x.base().data());
  });
}
BENCHMARK(BM_FillNormalF32)->Unit(benchmark::kMillisecond)->UseRealTime();

// HostUniform() is Tensor::RandomUniform as it was before the Philox kernels:
// doubles drawn on the host, uploaded as f64, converted to the dtype.
template <int D>
Tensor<D> HostUniform(const Shape& shape, Generator& generator) {
  std::vector<double> values(shape.num_elements());
  for (double& value : values) value = generator.NextUniform();
  return Tensor<D>(
      TensorBase::FromHost(values.data(), shape, DType::kF64, Device::Cpu())
          .To(DType::kF32));
}

void BM_FillUniformF32Host(benchmark::State& state) {
  Generator generator(1);
  MeasureFill(state, [&] {
    Tensor<1> x = HostUniform<1>({kElements}, generator);
    benchmark::DoNotOptimize(x.base().data());
  });
}
BENCHMARK(BM_FillUniformF32Host)->Unit(benchmark::kMillisecond)->UseRealTime();

// HostDropout() is nn::Dropout's training path before the Philox kernels.
Tensor<2> HostDropout(const Tensor<2>& input, Generator& generator,
                      double prob) {
  const Tensor<2> uniform = HostUniform<2>(input.shape(), generator);
  const Tensor<2> zeros = Tensor<2>::Zeros(input.shape());
  return where(uniform.greater_equal(prob), input * (1.0 / (1.0 - prob)),
               zeros);
}

void BM_Dropout(benchmark::State& state) {
  constexpr double kProb = 0.1;
  PhiloxGenerator data(2);
  const Tensor<2> x =
      Tensor<2>::RandomNormal({state.range(0), state.range(1)}, data);
  PhiloxGenerator generator(3);
  Generator host_generator(3);
  auto fused = [&] {
    const uint64_t offset = ops::ReserveDropoutBlocks(generator, x.base());
    TensorBase y = ops::Dropout(x.base(), kProb, generator.seed(), offset);
    benchmark::DoNotOptimize(y.data());
  };
  auto host = [&] {
    Tensor<2> y = HostDropout(x, host_generator, kProb);
    benchmark::DoNotOptimize(y.base().data());
  };
  state.counters["fused_allocations"] =
      static_cast<double>(AllocationsOf(fused));
  state.counters["host_allocations"] = static_cast<double>(AllocationsOf(host));
  double fused_seconds = 0;
  double host_seconds = 0;
  for (auto _ : state) {
    fused_seconds += TimeSeconds(fused);
    state.PauseTiming();
    host_seconds += TimeSeconds(host);
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["fused_ms"] = fused_seconds / iterations * 1e3;
  state.counters["host_ms"] = host_seconds / iterations * 1e3;
  state.counters["speedup"] = host_seconds / fused_seconds;
}
BENCHMARK(BM_Dropout)
    ->Args({128, 256})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kindling

BENCHMARK_MAIN();
