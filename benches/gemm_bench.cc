// f32 GEMM on the training workloads' shapes: OpenBLAS (cblas_sgemm) against
// oneDNN's matmul (backend/cpu/onednn_gemm.h), each single-threaded in every
// slab of Kindling's pool as ParallelGemm cuts it (backend/cpu/gemm.h), on
// the same operands, in alternating blocks of calls: what gemm.h's dispatch
// is decided by.
//
// Shapes (m x n x k, row-major, op(a) x op(b)): the products the MLP
// 784-256-256-256-10 at batch 128 and one block of the char-LM (4096 tokens,
// d_model 128, ffn 512, vocabulary 256) issue, as Matmul hands them to
// ParallelGemm. A Linear's weight is [d_input, d_output], so its forward
// x w is NN, its weight gradient x^T dy is TN with m = d_input, and its
// input gradient dy w^T is NT. The char-LM's query, key and value
// projections keep PyTorch's layout (rows of [3 E, E], y = x w^T: NT
// forward, NN input gradient, TN weight gradient dy^T x), and its head,
// tied to the embedding e [256, 128], is x e^T (NT) and takes the gradient
// of e^T (TN, 128 x 256).
//
// Counters: openblas_GFLOPs and onednn_GFLOPs (medians over the blocks) and
// onednn_vs_openblas = oneDNN's time / OpenBLAS's (< 1: oneDNN is faster).
//
// BM_AttentionTile: the fused attention's tile products at the char-LM's
// shapes (64-query tiles, heads of 32 read in place, rows 128 floats apart),
// one thread: cpu::Gemm (the library gemm.h picks) against the attention's
// own panels (nn/cpu/attention_products.h; AVX-512's where the CPU has it,
// else AVX2's, counter panels_are_avx512), whole tiles, no causal bound.
// Counters library_GFLOPs, panel_GFLOPs and panel_vs_library (the panels'
// time / the library's; < 1: the panels are faster).
//
//   taskset -c 0,1 bazel-bin/benches/gemm_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "benches/median.h"
#include "benchmark/benchmark.h"
#include "kindling/backend/cpu/gemm.h"
#include "kindling/backend/cpu/onednn_gemm.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/vector_math.h"
#include "kindling/nn/cpu/attention_products.h"

namespace kindling {
namespace {

using bench::Median;

struct GemmShape {
  const char* name;
  bool transpose_a, transpose_b;
  int64_t m, n, k;
};

constexpr GemmShape kShapes[] = {
    {"mlp_fc1_forward", false, false, 128, 256, 784},
    {"mlp_hidden_forward", false, false, 128, 256, 256},
    {"mlp_fc1_weight_grad", true, false, 784, 256, 128},
    {"mlp_hidden_weight_grad", true, false, 256, 256, 128},
    {"mlp_hidden_input_grad", false, true, 128, 256, 256},
    {"lm_qkv_forward", false, true, 4096, 128, 128},
    {"lm_out_forward", false, false, 4096, 128, 128},
    {"lm_ffn1_forward", false, false, 4096, 512, 128},
    {"lm_ffn2_forward", false, false, 4096, 128, 512},
    {"lm_head_forward", false, true, 4096, 256, 128},
    {"lm_projection_weight_grad", true, false, 128, 128, 4096},
    {"lm_ffn1_weight_grad", true, false, 128, 512, 4096},
    {"lm_ffn2_weight_grad", true, false, 512, 128, 4096},
    {"lm_head_weight_grad", true, false, 128, 256, 4096},
    {"lm_qkv_input_grad", false, false, 4096, 128, 128},
    {"lm_out_input_grad", false, true, 4096, 128, 128},
    {"lm_ffn1_input_grad", false, true, 4096, 128, 512},
    {"lm_ffn2_input_grad", false, true, 4096, 512, 128},
    {"lm_head_input_grad", false, false, 4096, 128, 256},
};

enum class Library { kOpenBlas, kOneDnn };

// SlabbedGemm() is ParallelGemm's split with `library` in every slab.
void SlabbedGemm(Library library, const GemmShape& s, const float* a,
                 const float* b, float* c) {
  const int64_t lda = s.transpose_a ? s.m : s.k;
  const int64_t ldb = s.transpose_b ? s.k : s.n;
  const bool split_rows = s.m >= s.n;
  const int64_t extent = split_rows ? s.m : s.n;
  const int64_t slabs =
      std::min<int64_t>(cpu::MaxThreads(), extent / cpu::kSlabAlign);
  cpu::ParallelSlabs(slabs, [&](int64_t slab) {
    const auto [begin, end] = cpu::GemmSlab(extent, slabs, slab);
    const int64_t m = split_rows ? end - begin : s.m;
    const int64_t n = split_rows ? s.n : end - begin;
    const float* a_part =
        !split_rows ? a : (s.transpose_a ? a + begin : a + begin * lda);
    const float* b_part =
        split_rows ? b : (s.transpose_b ? b + begin * ldb : b + begin);
    float* c_part = split_rows ? c + begin * s.n : c + begin;
    if (library == Library::kOneDnn &&
        cpu::OneDnnSgemm(s.transpose_a, s.transpose_b, m, n, s.k, a_part, lda,
                         b_part, ldb, c_part, s.n, false)) {
      return;
    }
    cblas_sgemm(CblasRowMajor, s.transpose_a ? CblasTrans : CblasNoTrans,
                s.transpose_b ? CblasTrans : CblasNoTrans, m, n, s.k, 1.0f,
                a_part, lda, b_part, ldb, 0.0f, c_part, s.n);
  });
}

// TwoWays: the two implementations a benchmark compares, and its counters'
// names: <first>_GFLOPs, <second>_GFLOPs and <ratio> = the second's time
// over the first's.
struct TwoWays {
  const char* first;
  const char* second;
  const char* ratio;
};

// Alternate() times `calls` calls of run(false), then of run(true), once
// per iteration after a warm-up block of each (which builds oneDNN's plans),
// and reports the medians as `ways` names them.
template <class Run>
void Alternate(benchmark::State& state, double flops, int calls,
               const TwoWays& ways, const Run& run) {
  auto block = [&](bool second) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) run(second);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
               .count() /
           calls;
  };
  block(false);
  block(true);
  std::vector<double> first, second;
  for (auto _ : state) {
    first.push_back(block(false));
    second.push_back(block(true));
    state.SetIterationTime(first.back() + second.back());
  }
  state.counters[std::string(ways.first) + "_GFLOPs"] =
      flops / Median(first) / 1e9;
  state.counters[std::string(ways.second) + "_GFLOPs"] =
      flops / Median(second) / 1e9;
  state.counters[ways.ratio] = Median(second) / Median(first);
}

void BM_Gemm(benchmark::State& state) {
  const GemmShape& s = kShapes[state.range(0)];
  state.SetLabel(s.name);
  cpu::UseSingleThreadedBlas();
  std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
  const double flops = 2.0 * s.m * s.n * s.k;
  // Blocks of about 20 ms.
  const int calls = std::max<int>(1, static_cast<int>(4e9 / flops));
  Alternate(state, flops, calls, {"openblas", "onednn", "onednn_vs_openblas"},
            [&](bool onednn) {
              SlabbedGemm(onednn ? Library::kOneDnn : Library::kOpenBlas, s,
                          a.data(), b.data(), c.data());
            });
}

BENCHMARK(BM_Gemm)
    ->DenseRange(0, std::size(kShapes) - 1)
    ->Iterations(7)
    ->UseManualTime();

// One tile product: c [m, n] = op(a) op(b), with the leading dimensions the
// attention passes (heads in place: 128; its own tiles dense).
struct TileShape {
  const char* name;
  bool transpose_a, transpose_b;
  int64_t m, n, k, lda, ldb, ldc;
};

constexpr TileShape kTiles[] = {
    {"scores_q_kT_64x64x32", false, true, 64, 64, 32, 128, 128, 64},
    {"scores_q_kT_64x128x32", false, true, 64, 128, 32, 128, 128, 128},
    {"out_p_v_64x32x128", false, false, 64, 32, 128, 128, 128, 32},
    {"grad_v_pT_dO_64x32x128", true, false, 64, 32, 128, 64, 128, 128},
    {"grad_q_dS_k_128x32x64", false, false, 128, 32, 64, 64, 128, 128},
    {"grad_k_dST_q_64x32x128", true, false, 64, 32, 128, 64, 128, 128},
};

void BM_AttentionTile(benchmark::State& state) {
  const TileShape& s = kTiles[state.range(0)];
  state.SetLabel(s.name);
  // The panels this CPU runs: AVX-512's where it has it, else AVX2's.
  const auto panel_product =
      cpu::HasAvx512() ? &nn::Avx512PanelProductF32 : &nn::Avx2PanelProductF32;
  state.counters["panels_are_avx512"] = cpu::HasAvx512() ? 1 : 0;
  cpu::UseSingleThreadedBlas();
  std::vector<float> a(1 << 16, 0.5f), b(1 << 16, 0.25f), c(1 << 16);
  const double flops = 2.0 * s.m * s.n * s.k;
  Alternate(state, flops, 2000, {"library", "panel", "panel_vs_library"},
            [&](bool panels) {
              if (panels) {
                panel_product(s.transpose_a, s.transpose_b, s.m, s.n, s.k,
                              a.data(), s.lda, b.data(), s.ldb, c.data(), s.ldc,
                              cpu::GemmAccumulate::kOverwrite, {});
                return;
              }
              cpu::Gemm<float>(s.transpose_a ? CblasTrans : CblasNoTrans,
                               s.transpose_b ? CblasTrans : CblasNoTrans, s.m,
                               s.n, s.k, a.data(), s.lda, b.data(), s.ldb,
                               c.data(), s.ldc);
            });
}

BENCHMARK(BM_AttentionTile)
    ->DenseRange(0, std::size(kTiles) - 1)
    ->Iterations(7)
    ->UseManualTime();

}  // namespace
}  // namespace kindling

BENCHMARK_MAIN();
