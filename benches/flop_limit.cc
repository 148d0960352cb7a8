#include "benches/flop_limit.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "kindling/backend/cpu/parallel.h"

namespace kindling::bench {
namespace {

constexpr int kSize = 1024;
constexpr int kRuns = 5;

// Median seconds of kRuns calls of `gemm` after one warm-up call.
template <class Gemm>
double MedianSeconds(const Gemm& gemm) {
  gemm();
  std::vector<double> seconds;
  for (int run = 0; run < kRuns; ++run) {
    const auto start = std::chrono::steady_clock::now();
    gemm();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + kRuns / 2, seconds.end());
  return seconds[kRuns / 2];
}

GemmRate OpenBlasRate() {
  std::vector<float> a(kSize * kSize, 0.5f), b(kSize * kSize, 0.25f),
      c(kSize * kSize);
  // Kindling runs OpenBLAS single-threaded inside its own pool
  // (backend/cpu/gemm.h); here OpenBLAS gets the same thread count itself.
  openblas_set_num_threads(cpu::MaxThreads());
  const double seconds = MedianSeconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSize, kSize, kSize,
                1.0f, a.data(), kSize, b.data(), kSize, 0.0f, c.data(), kSize);
    benchmark::ClobberMemory();
  });
  openblas_set_num_threads(1);
  return {"openblas", 2.0 * kSize * kSize * kSize / seconds};
}

}  // namespace

GemmRate BestGemmRate() { return OpenBlasRate(); }

void ReportFlopLimit(benchmark::State& state, double flops, double seconds,
                     const GemmRate& rate) {
  const double limit = flops / rate.flops_per_second;
  state.counters["gemm_GFLOPs"] = rate.flops_per_second / 1e9;
  state.counters["flop_limit_s"] = limit;
  state.counters["ratio_vs_flop_limit"] = seconds / limit;
}

}  // namespace kindling::bench
