// OneDnnSgemm: f32 GEMM through oneDNN's matmul primitive, single-threaded,
// for gemm.h's Gemm() (and so for every slab of ParallelGemm: Matmul,
// Kindling's own Conv2d, the fused attention's tiles).
//
// Measured on the products the training workloads issue, one
// single-threaded call per slab of Kindling's pool (benches/gemm_bench, 2
// threads, medians of 3), oneDNN's time over OpenBLAS's. On an AMD EPYC
// with AVX2 only (Zen 3, five runs): 0.70-1.08 on the forward and
// input-gradient products of the MLP and the char-LM (62 readings of 70
// below 0.95), 0.99-1.26 on the MLP's weight gradients; the char-LM's, where
// oneDNN was the slower library, stay with OpenBLAS there (gemm.h's
// OpenBlasWinsLongWeightGradients(), which carries their figures and those
// of the CPUs where they do not).
// On an AMD EPYC of family 23 (Zen 1, AVX2 on 128-bit units; one run of
// medians of 3): 0.44 on the MLP's forward and input-gradient products,
// where OpenBLAS reached 29-31 GFLOP/s, 0.90-0.95 on the char-LM's, and
// 0.85-1.13 on the weight gradients (gemm.h's rule keeps them with oneDNN
// there).
// On AMD EPYCs with AVX-512, on the same sizes with PyTorch's transposes:
// 0.80-0.88 on the MLP's products, 0.76-1.01 on a char-LM block's (the
// k = 4096 weight gradients 0.76-0.78). See docs/performance.md for what it
// does to whole training steps.
//
// A shape goes to oneDNN when both sides of the output are at least
// kMinSide and its work m * n * k at least kMinWork (below these, thin or
// small products, oneDNN's fixed cost per call is not paid back), and it is
// one of the first kMaxShapes shapes the process offered oneDNN (beyond
// them, OpenBLAS). The choice depends on the shape alone, never on which
// thread runs a slab, so a training run rounds the same way every time.
// Each thread builds its own primitive for a shape on first use (60-300 us)
// and keeps it, with its memory objects and scratchpad. oneDNN runs with one
// OpenMP thread, as the convolutions do (onednn_conv2d.h): the pool owns the
// cores, and with asynchronous signals deferred where its generated sgemm
// runs (onednn_common.h's SignalsDeferred).
// gemm.h's Gemm() does not offer oneDNN the long weight gradients on AMD's
// Zen 3, where OpenBLAS measured faster (its OpenBlasIsFaster()).
// KINDLING_ONEDNN=0 turns the path off.
#ifndef KINDLING_BACKEND_CPU_ONEDNN_GEMM_H_
#define KINDLING_BACKEND_CPU_ONEDNN_GEMM_H_

#include <cstdint>

namespace kindling::cpu {

// OneDnnSgemm() computes c [m, n] = op(a) [m, k] x op(b) [k, n], or adds
// that to c (`accumulate`), row-major with cblas_sgemm's leading dimensions,
// on the calling thread. It returns false, having written nothing, where
// the rules above send the shape to OpenBLAS or oneDNN refuses it.
bool OneDnnSgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_ONEDNN_GEMM_H_
