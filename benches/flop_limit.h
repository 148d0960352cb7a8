// The FLOP-limit yardstick of the training benchmarks: the shortest time a
// workload's FLOPs (kindling/nn/flop_count.h) could take at the best f32
// GEMM rate this machine's libraries reach, measured in the same run at
// Kindling's thread count. A training step at ratio_vs_flop_limit 1.3 spends
// 30% more than its arithmetic alone needs at that rate.
#ifndef KINDLING_BENCHES_FLOP_LIMIT_H_
#define KINDLING_BENCHES_FLOP_LIMIT_H_

#include <string>

#include "benchmark/benchmark.h"

namespace kindling::bench {

// GemmRate: a library's f32 GEMM rate.
struct GemmRate {
  std::string library;  // "openblas", "onednn"
  double flops_per_second = 0;
};

// BestGemmRate() measures each library's 1024^3 f32 GEMM (OpenBLAS's
// cblas_sgemm, oneDNN's matmul; the median of 5 calls after a warm-up) at
// kindling::cpu::MaxThreads() threads, three times each, alternating, with
// a pause before each so the other library's idle threads have stopped
// spinning, and returns the fastest. About two seconds.
GemmRate BestGemmRate();

// ReportFlopLimit() sets `state`'s counters for a workload of `flops` that
// took `seconds`: gemm_GFLOPs (the rate), gemm_is_onednn (1 when oneDNN's
// was the faster, 0 for OpenBLAS), flop_limit_s (flops / rate) and
// ratio_vs_flop_limit (seconds / flop_limit_s), and returns flop_limit_s.
double ReportFlopLimit(benchmark::State& state, double flops, double seconds,
                       const GemmRate& rate);

}  // namespace kindling::bench

#endif  // KINDLING_BENCHES_FLOP_LIMIT_H_
