// CUDA kernels against their limits on cuda:0, each peer timed in the same
// benchmark, interleaved with the op (one peer call after every iteration),
// with CUDA events on the backend's stream:
//
//   BM_CudaGemm/<dtype>   4096^3 Backend::Matmul   `ratio_vs_cublas`: the
//                         time of cublasGemmEx called directly on the same
//                         buffers / Kindling's time. Goal >= 0.95.
//   BM_CudaAddF32         64M-element a + b        `ratio_vs_memcpy`: add's
//                         GB/s (2 reads + 1 write) / cudaMemcpy D2D GB/s
//                         (1 read + 1 write) of the same bytes. Goal >= 0.8.
//   BM_CudaSoftmaxF32     softmax along the last axis of [8192, 4096]
//                         `ratio_vs_memcpy` (1 read + 1 write). Goal >= 0.6.
//   BM_CudaLayerNormF32   layer norm of [8192, 4096] over the last axis
//                         with gamma and beta, the fused Backend::LayerNorm
//                         (a block per row, the row cached in shared memory:
//                         x read once), `ratio_vs_memcpy` counting one read +
//                         one write. Goal >= 0.8.
//   BM_CudaLayerNormBackwardF32  Backend::LayerNormBackward on the same
//                         shape, all three gradients, `ratio_vs_memcpy`
//                         counting the traffic the kernels do: x and dy
//                         read and dx written by the row pass, x and dy
//                         read again by the gamma/beta partials pass (at
//                         256 MiB they do not stay in L2): 5 buffers against
//                         memcpy's 2, so 1.0 means memcpy's bandwidth.
//                         Goal >= 0.6.
//
//   tools/bazel run --config=cuda //benches:cuda_kernels_bench --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Needs a GPU: without one it prints why and exits 0 (the smoke test runs
// it on machines without a device).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <functional>

#include "benchmark/benchmark.h"
#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {
namespace {

const Device kGpu = Device::Cuda(0);

// EventTimer: seconds of GPU work enqueued by `work` on `stream`.
double TimeOnStream(cudaStream_t stream, const std::function<void()>& work) {
  cudaEvent_t start, stop;
  KINDLING_CUDA_CHECK(cudaEventCreate(&start));
  KINDLING_CUDA_CHECK(cudaEventCreate(&stop));
  KINDLING_CUDA_CHECK(cudaEventRecord(start, stream));
  work();
  KINDLING_CUDA_CHECK(cudaEventRecord(stop, stream));
  KINDLING_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  KINDLING_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  KINDLING_CUDA_CHECK(cudaEventDestroy(start));
  KINDLING_CUDA_CHECK(cudaEventDestroy(stop));
  return ms * 1e-3;
}

TensorBase Random(const Shape& shape, DType dtype) {
  const TensorBase tensor = TensorBase::Empty(shape, dtype, kGpu);
  GetBackend(kGpu).FillRandom(tensor, RandomDistribution::kUniform, 1, 0, -1,
                              1);
  return tensor;
}

// RunAgainstPeer(): times `op` as the benchmark's iteration time and `peer`
// after each iteration; reports peer_time / op_time as `counter`, scaled by
// `peer_scale` (bytes or flops per second normalization).
void RunAgainstPeer(benchmark::State& state, const char* counter,
                    double peer_scale, const std::function<void()>& op,
                    const std::function<void()>& peer) {
  cudaStream_t stream = cuda::CurrentCudaStream(0);
  op();  // warm up (cuBLAS heuristics, allocator caches)
  peer();
  KINDLING_CUDA_CHECK(cudaStreamSynchronize(stream));
  double op_total = 0, peer_total = 0;
  for (auto _ : state) {
    const double op_seconds = TimeOnStream(stream, op);
    state.SetIterationTime(op_seconds);
    op_total += op_seconds;
    peer_total += TimeOnStream(stream, peer);
  }
  state.counters[counter] = peer_scale * peer_total / op_total;
}

void BM_CudaGemm(benchmark::State& state, DType dtype) {
  const int n = 4096;
  const TensorBase a = Random({n, n}, dtype);
  const TensorBase b = Random({n, n}, dtype);
  const TensorBase c = TensorBase::Empty({n, n}, dtype, kGpu);
  const cudaDataType_t type = dtype == DType::kF32   ? CUDA_R_32F
                              : dtype == DType::kF16 ? CUDA_R_16F
                                                     : CUDA_R_16BF;
  RunAgainstPeer(
      state, "ratio_vs_cublas", 1.0, [&] { GetBackend(kGpu).Matmul(c, a, b); },
      [&] {
        cublasHandle_t handle = cuda::CublasHandle(0);
        KINDLING_CUBLAS_CHECK(
            cublasSetStream(handle, cuda::CurrentCudaStream(0)));
        const float one = 1, zero = 0;
        KINDLING_CUBLAS_CHECK(
            cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                         b.data(), type, n, a.data(), type, n, &zero, c.data(),
                         type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      });
  state.counters["TFLOPS"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}
BENCHMARK_CAPTURE(BM_CudaGemm, f32, DType::kF32)->UseManualTime();
BENCHMARK_CAPTURE(BM_CudaGemm, f16, DType::kF16)->UseManualTime();
BENCHMARK_CAPTURE(BM_CudaGemm, bf16, DType::kBF16)->UseManualTime();

// MemcpyPeer(): a D2D copy of `bytes` on the backend's stream.
std::function<void()> MemcpyPeer(void* dst, const void* src, size_t bytes) {
  return [=] {
    KINDLING_CUDA_CHECK(cudaMemcpyAsync(
        dst, src, bytes, cudaMemcpyDeviceToDevice, cuda::CurrentCudaStream(0)));
  };
}

void BM_CudaAddF32(benchmark::State& state) {
  const int64_t n = int64_t{64} << 20;
  const TensorBase a = Random({n}, DType::kF32);
  const TensorBase b = Random({n}, DType::kF32);
  const TensorBase c = TensorBase::Empty({n}, DType::kF32, kGpu);
  const size_t bytes = n * sizeof(float);
  // add moves 3 buffers, memcpy 2: bandwidth ratio = (3/t_add)/(2/t_copy).
  RunAgainstPeer(
      state, "ratio_vs_memcpy", 1.5,
      [&] { GetBackend(kGpu).Binary(BinaryOp::kAdd, c, a, b); },
      MemcpyPeer(c.data(), a.data(), bytes));
  state.SetBytesProcessed(state.iterations() * 5 * bytes);
}
BENCHMARK(BM_CudaAddF32)->UseManualTime();

void BM_CudaSoftmaxF32(benchmark::State& state) {
  const TensorBase x = Random({8192, 4096}, DType::kF32);
  const TensorBase y = TensorBase::Empty(x.shape(), DType::kF32, kGpu);
  const size_t bytes = x.numel() * sizeof(float);
  RunAgainstPeer(
      state, "ratio_vs_memcpy", 1.0,
      [&] { GetBackend(kGpu).Softmax(y, x, 1, false); },
      MemcpyPeer(y.data(), x.data(), bytes));
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
}
BENCHMARK(BM_CudaSoftmaxF32)->UseManualTime();

void BM_CudaLayerNormF32(benchmark::State& state) {
  const int64_t rows = 8192, cols = 4096;
  const TensorBase x = Random({rows, cols}, DType::kF32);
  const TensorBase gamma = Random({cols}, DType::kF32);
  const TensorBase beta = Random({cols}, DType::kF32);
  const TensorBase y = TensorBase::Empty(x.shape(), DType::kF32, kGpu);
  const TensorBase mean = TensorBase::Empty({rows}, DType::kF32, kGpu);
  const TensorBase rstd = TensorBase::Empty({rows}, DType::kF32, kGpu);
  const size_t bytes = x.numel() * sizeof(float);
  Backend& gpu = GetBackend(kGpu);
  RunAgainstPeer(
      state, "ratio_vs_memcpy", 1.0,
      [&] { gpu.LayerNorm(y, mean, rstd, x, gamma, beta, 1e-5); },
      MemcpyPeer(y.data(), x.data(), bytes));
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
}
BENCHMARK(BM_CudaLayerNormF32)->UseManualTime();

void BM_CudaLayerNormBackwardF32(benchmark::State& state) {
  const int64_t rows = 8192, cols = 4096;
  const TensorBase x = Random({rows, cols}, DType::kF32);
  const TensorBase dy = Random({rows, cols}, DType::kF32);
  const TensorBase gamma = Random({cols}, DType::kF32);
  const TensorBase y = TensorBase::Empty(x.shape(), DType::kF32, kGpu);
  const TensorBase mean = TensorBase::Empty({rows}, DType::kF32, kGpu);
  const TensorBase rstd = TensorBase::Empty({rows}, DType::kF32, kGpu);
  Backend& gpu = GetBackend(kGpu);
  gpu.LayerNorm(y, mean, rstd, x, gamma, TensorBase(), 1e-5);
  const TensorBase dx = TensorBase::Empty(x.shape(), DType::kF32, kGpu);
  const TensorBase dgamma = TensorBase::Empty({cols}, DType::kF32, kGpu);
  const TensorBase dbeta = TensorBase::Empty({cols}, DType::kF32, kGpu);
  const size_t bytes = x.numel() * sizeof(float);
  // 5 buffers moved against memcpy's 2.
  RunAgainstPeer(
      state, "ratio_vs_memcpy", 2.5,
      [&] {
        gpu.LayerNormBackward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma);
      },
      MemcpyPeer(dx.data(), x.data(), bytes));
  state.SetBytesProcessed(state.iterations() * 3 * bytes);
}
BENCHMARK(BM_CudaLayerNormBackwardF32)->UseManualTime();

}  // namespace
}  // namespace kindling

int main(int argc, char** argv) {
  const kindling::cuda::GpuCheck gpu = kindling::cuda::CheckCudaDevices(1);
  if (gpu.verdict == kindling::cuda::GpuVerdict::kFail) {
    std::fprintf(stderr, "cuda_kernels_bench: %s\n", gpu.message.c_str());
    return 1;
  }
  if (gpu.verdict == kindling::cuda::GpuVerdict::kSkip) {
    std::printf("cuda_kernels_bench: skipped, nothing run: %s\n",
                gpu.message.c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
