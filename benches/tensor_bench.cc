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
//   BM_MulScalarF32  16M-element x * 2.0  `ratio_vs_memcpy` (1 read + 1
//                    write); BM_MulScalarSmallF32 the same at 16..16K floats.
//   BM_Reduce/<op>_<where>, BM_Softmax/<op>_<where>, BM_Unary/<op>
//                    `vs_torch` / `vs_torch113`: today's PyTorch's (from
//                    tools/peers) or Debian's 1.13's median time for the
//                    same op on the same shape / Kindling's median time
//                    (>= 1 means at least as fast). <where> is `all` (a
//                    16M-element vector), `last` or `first` (axis 1 or 0 of a
//                    [4096, 1024] matrix); the unary ops run on the matrix.
//                    Each PyTorch runs in a child process,
//                    benches/peers/torch_ops.py
//                    --serve (benches/torch_peer.h: same threads, same
//                    cores), one timed call after each Kindling iteration.
//                    `vs_torch_cpu` is the same ratio of process CPU time.
//   BM_LayerNorm/layer_norm_last, BM_LayerNorm/layer_norm_backward
//                    `vs_torch`, `vs_torch113` as above for nn::LayerNormOp
//                    over the last axis of the [4096, 1024] matrix (gamma ones,
//                    beta zeros, eps 1e-5) against
//                    torch.nn.functional.layer_norm: the forward alone, and
//                    forward + backward of all three operands for a N(0, 1)
//                    output gradient (Kindling's Backward(),
//                    torch.autograd.grad).
//   BM_Unary/gelu_backward  the same for GELU over the matrix, forward +
//                    backward for that output gradient.
//   BM_CrossEntropy/cross_entropy_backward  the same for nn::CrossEntropy of
//                    the matrix's rows as logits over 1024 classes (row r's
//                    label r * 7919 mod 1024), forward + backward of the
//                    logits, against torch.nn.functional.cross_entropy;
//                    `peak_vs_logits`: the call's peak tensor memory beyond
//                    what was live before it / the logits' bytes.
//   BM_ReluBiasBackward/<rows>/<columns>  `fused_vs_composed`: the fused
//                    ReLU and bias backward's median time / the composed
//                    ops' (the mask, then the column sum), alternating.
// Each ratio's peer runs interleaved with the op inside the same benchmark
// (one peer call after every iteration, timer paused), so both see the same
// machine load; BM_Memcpy and BM_CblasSgemm also run alone for reference.
//
//   tools/bazel run //benches:tensor_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//
// It runs with OMP_WAIT_POLICY=passive unless the caller set a policy
// (bench::PeerBenchmarkMain says why).
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "benches/torch_peer.h"
#include "benchmark/benchmark.h"
#include "kindling/autodiff/backward.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/nn/loss.h"
#include "kindling/nn/normalize.h"
#include "kindling/tensor/grad_node.h"
#include "kindling/tensor/memory_stats.h"
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

// x * 2.0, the scalar op behind loss scaling and most gradients: 16M
// elements (1 read + 1 write, `ratio_vs_memcpy` as above) and a few small
// sizes (time per op: dispatch cost, the scalar's own handling included).
void BM_MulScalarF32(benchmark::State& state) {
  const auto a = Tensor<1>::Full({kElements}, 1.5);
  MeasureBandwidth(state, 2.0 * kBytes, [&] {
    Tensor<1> c = a * 2.0;
    benchmark::DoNotOptimize(c.base().data());
  });
}
BENCHMARK(BM_MulScalarF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MulScalarSmallF32(benchmark::State& state) {
  const auto a = Tensor<1>::Full({state.range(0)}, 1.5);
  for (auto _ : state) {
    Tensor<1> c = a * 2.0;
    benchmark::DoNotOptimize(c.base().data());
  }
}
BENCHMARK(BM_MulScalarSmallF32)->Arg(16)->Arg(1024)->Arg(16384);

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

// --- Against PyTorch
// ----------------------------------------------------------

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle]
                                : 0.5 * (values[middle - 1] + values[middle]);
}

// The inputs of the vs_torch benchmarks, made once, with the shapes and
// distributions torch_ops.py uses.
struct TorchCaseInputs {
  Tensor<1> flat;      // [16M] N(0, 1)
  Tensor<2> matrix;    // [4096, 1024] N(0, 1)
  Tensor<2> positive;  // [4096, 1024] U[0.01, 10), for log and sqrt
  // Layer norm over the matrix's last axis: gamma ones, beta zeros; the
  // *_leaf tensors require grad (forward + backward), `upstream` is the
  // output gradient [4096, 1024] N(0, 1).
  Tensor<1> gamma;
  Tensor<1> beta;
  Tensor<2> matrix_leaf;
  Tensor<1> gamma_leaf;
  Tensor<1> beta_leaf;
  Tensor<2> upstream;
  // Cross-entropy of the matrix's rows as logits over 1024 classes: row r's
  // label is r * 7919 mod 1024.
  Tensor<1, Int> labels;
};

const TorchCaseInputs& Inputs() {
  static const TorchCaseInputs* inputs = [] {
    Generator generator(1);
    auto* made = new TorchCaseInputs;
    made->flat = Tensor<1>::RandomNormal({kElements}, generator);
    made->matrix = Tensor<2>::RandomNormal({4096, 1024}, generator);
    made->positive =
        Tensor<2>::RandomUniform({4096, 1024}, generator, 0.01, 10.0);
    made->gamma = Tensor<1>::Ones({1024});
    made->beta = Tensor<1>::Zeros({1024});
    made->matrix_leaf = made->matrix.set_require_grad(true);
    made->gamma_leaf = made->gamma.set_require_grad(true);
    made->beta_leaf = made->beta.set_require_grad(true);
    made->upstream = Tensor<2>::RandomNormal({4096, 1024}, generator);
    std::vector<int64_t> labels(4096);
    for (int64_t r = 0; r < 4096; ++r) labels[r] = r * 7919 % 1024;
    made->labels = Tensor<1, Int>::FromData<int64_t>(labels, {4096});
    return made;
  }();
  return *inputs;
}

double ProcessCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return now.tv_sec + 1e-9 * now.tv_nsec;
}

// Runs `op` on the shared inputs each iteration and, after it (timer
// paused), torch_ops.py's op `torch_op` once in each peer of
// bench::TorchOpsPeers() (today's torch, Debian's 1.13). Reports
// kindling_ms, and for each peer <label>_ms, vs_<label> = peer median /
// Kindling median and vs_<label>_cpu, the same ratio of process CPU time
// (both threads; on a machine shared with other work it counts only the time
// the op was on a core). <label> is torch (today's) or torch113.
template <class Op>
void CompareWithTorch(benchmark::State& state, const std::string& torch_op,
                      Op op) {
  const TorchCaseInputs& inputs = Inputs();
  const std::vector<bench::TorchOpsPeer*>& peers =
      bench::TorchOpsPeers(cpu::MaxThreads());
  if (peers.empty()) {
    state.SkipWithError("no PyTorch peer could start (see stderr)");
    return;
  }
  op(inputs);  // warm up all
  for (bench::TorchOpsPeer* peer : peers) peer->Time(torch_op, 1, 2);
  std::vector<double> ours, ours_cpu;
  std::vector<std::vector<double>> theirs(peers.size()),
      theirs_cpu(peers.size());
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double start_cpu = ProcessCpuSeconds();
    op(inputs);
    ours_cpu.push_back(ProcessCpuSeconds() - start_cpu);
    ours.push_back(Seconds(std::chrono::steady_clock::now() - start));
    state.PauseTiming();
    for (size_t i = 0; i < peers.size(); ++i) {
      const bench::TorchOpsPeer::Timing timing = peers[i]->Time(torch_op, 1, 0);
      theirs[i].push_back(timing.wall);
      theirs_cpu[i].push_back(timing.cpu);
    }
    state.ResumeTiming();
  }
  state.counters["kindling_ms"] = Median(ours) * 1e3;
  for (size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i]->error().empty()) {
      state.SkipWithError(peers[i]->error().c_str());
      return;
    }
    const std::string& label = peers[i]->label();
    state.counters[label + "_ms"] = Median(theirs[i]) * 1e3;
    state.counters["vs_" + label] = Median(theirs[i]) / Median(ours);
    state.counters["vs_" + label + "_cpu"] =
        Median(theirs_cpu[i]) / Median(ours_cpu);
  }
}

template <class T>
void Keep(const T& result) {
  benchmark::DoNotOptimize(result.base().data());
}

void BM_Reduce(benchmark::State& state, const std::string& torch_op,
               void (*op)(const TorchCaseInputs&)) {
  CompareWithTorch(state, torch_op, op);
}
void BM_Softmax(benchmark::State& state, const std::string& torch_op,
                void (*op)(const TorchCaseInputs&)) {
  CompareWithTorch(state, torch_op, op);
}
void BM_Unary(benchmark::State& state, const std::string& torch_op,
              void (*op)(const TorchCaseInputs&)) {
  CompareWithTorch(state, torch_op, op);
}

using In = const TorchCaseInputs&;
#define KINDLING_VS_TORCH(family, name, expression)                       \
  BENCHMARK_CAPTURE(family, name, #name, [](In in) { Keep(expression); }) \
      ->Unit(benchmark::kMillisecond)                                     \
      ->UseRealTime()

KINDLING_VS_TORCH(BM_Reduce, sum_all, in.flat.sum());
KINDLING_VS_TORCH(BM_Reduce, sum_last, in.matrix.sum_dim(1));
KINDLING_VS_TORCH(BM_Reduce, sum_first, in.matrix.sum_dim(0));
KINDLING_VS_TORCH(BM_Reduce, mean_all, in.flat.mean());
KINDLING_VS_TORCH(BM_Reduce, mean_last, in.matrix.mean_dim(1));
KINDLING_VS_TORCH(BM_Reduce, mean_first, in.matrix.mean_dim(0));
KINDLING_VS_TORCH(BM_Reduce, max_all, in.flat.max());
KINDLING_VS_TORCH(BM_Reduce, max_last, in.matrix.max_dim(1));
KINDLING_VS_TORCH(BM_Reduce, max_first, in.matrix.max_dim(0));
KINDLING_VS_TORCH(BM_Reduce, min_all, in.flat.min());
KINDLING_VS_TORCH(BM_Reduce, min_last, in.matrix.min_dim(1));
KINDLING_VS_TORCH(BM_Reduce, min_first, in.matrix.min_dim(0));
KINDLING_VS_TORCH(BM_Reduce, argmax_all, in.flat.argmax(0));
KINDLING_VS_TORCH(BM_Reduce, argmax_last, in.matrix.argmax(1));
KINDLING_VS_TORCH(BM_Reduce, argmax_first, in.matrix.argmax(0));
KINDLING_VS_TORCH(BM_Softmax, softmax_last, in.matrix.softmax(1));
KINDLING_VS_TORCH(BM_Softmax, softmax_first, in.matrix.softmax(0));
KINDLING_VS_TORCH(BM_Softmax, log_softmax_last, in.matrix.log_softmax(1));
KINDLING_VS_TORCH(BM_Softmax, log_softmax_first, in.matrix.log_softmax(0));
KINDLING_VS_TORCH(BM_Unary, exp, in.matrix.exp());
KINDLING_VS_TORCH(BM_Unary, log, in.positive.log());
KINDLING_VS_TORCH(BM_Unary, tanh, in.matrix.tanh());
KINDLING_VS_TORCH(BM_Unary, sigmoid, in.matrix.sigmoid());
KINDLING_VS_TORCH(BM_Unary, gelu, in.matrix.gelu());
KINDLING_VS_TORCH(BM_Unary, sqrt, in.positive.sqrt());

void GeluForwardBackward(In in) {
  const Tensor<2> y = in.matrix_leaf.gelu();
  BackwardOptions options;
  options.grad_output = in.upstream.base();
  const Gradients grads = Backward(y.base(), options);
  benchmark::DoNotOptimize(grads.Get(in.matrix_leaf.leaf_id())->data());
}
BENCHMARK_CAPTURE(BM_Unary, gelu_backward, "gelu_backward", GeluForwardBackward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LayerNorm(benchmark::State& state, const std::string& torch_op,
                  void (*op)(const TorchCaseInputs&)) {
  CompareWithTorch(state, torch_op, op);
}

void LayerNormForward(In in) {
  const TensorBase y =
      nn::LayerNormOp(in.matrix.base(), in.gamma.base(), in.beta.base(), 1e-5);
  benchmark::DoNotOptimize(y.data());
}

void LayerNormForwardBackward(In in) {
  const TensorBase y = nn::LayerNormOp(
      in.matrix_leaf.base(), in.gamma_leaf.base(), in.beta_leaf.base(), 1e-5);
  BackwardOptions options;
  options.grad_output = in.upstream.base();
  const Gradients grads = Backward(y, options);
  benchmark::DoNotOptimize(grads.Get(in.matrix_leaf.leaf_id())->data());
}

BENCHMARK_CAPTURE(BM_LayerNorm, layer_norm_last, "layer_norm_last",
                  LayerNormForward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_LayerNorm, layer_norm_backward, "layer_norm_backward",
                  LayerNormForwardBackward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Also reports peak_vs_logits: the most tensor memory one call holds beyond
// what was live before it, over the logits' bytes (the log-probabilities
// the backward reads and the gradient it writes are one each).
void BM_CrossEntropy(benchmark::State& state, const std::string& torch_op,
                     void (*op)(const TorchCaseInputs&)) {
  CompareWithTorch(state, torch_op, op);
  ResetMemoryStats(Device::Cpu());
  const int64_t before = GetMemoryStats(Device::Cpu()).live_bytes;
  op(Inputs());
  state.counters["peak_vs_logits"] =
      static_cast<double>(GetMemoryStats(Device::Cpu()).peak_live_bytes -
                          before) /
      static_cast<double>(Inputs().matrix.base().numel() * sizeof(float));
}

void CrossEntropyForwardBackward(In in) {
  const Tensor<0> loss = nn::CrossEntropy(in.matrix_leaf, in.labels);
  const Gradients grads = Backward(loss);
  benchmark::DoNotOptimize(grads.Get(in.matrix_leaf.leaf_id())->data());
}

BENCHMARK_CAPTURE(BM_CrossEntropy, cross_entropy_backward,
                  "cross_entropy_backward", CrossEntropyForwardBackward)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// BM_ReluBiasBackward/<rows>/<columns>: the gradients at a fully connected
// layer's product and bias through its ReLU, from the gradient at its output
// (N(0, 1), the output half positive): the backend's one pass
// (Backend::ReluBiasBackward, which takes up to 64 Ki elements in rows of up
// to 256) against the ops it replaces (Binary kReluBackward, then
// SumToShape), alternating in the same loop. [128, 256] is the MLP's hidden
// layers.
// `fused_vs_composed` = median fused time / median composed time.
void BM_ReluBiasBackward(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const int64_t columns = state.range(1);
  Generator generator(3);
  const TensorBase grad =
      Tensor<2>::RandomNormal({rows, columns}, generator).base();
  const TensorBase out =
      Tensor<2>::RandomNormal({rows, columns}, generator).relu().base();
  const Shape bias_shape{columns};
  Backend& backend = GetBackend(Device::Cpu());
  const auto fused = [&] {
    const TensorBase product =
        TensorBase::Empty(grad.shape(), DType::kF32, Device::Cpu());
    const TensorBase bias =
        TensorBase::Empty(bias_shape, DType::kF32, Device::Cpu());
    if (!backend.ReluBiasBackward(product, bias, grad, out)) return false;
    benchmark::DoNotOptimize(bias.data());
    return true;
  };
  const auto composed = [&] {
    const TensorBase product = ops::Binary(BinaryOp::kReluBackward, grad, out);
    benchmark::DoNotOptimize(autodiff::SumToShape(product, bias_shape).data());
  };
  if (!fused()) {
    state.SkipWithError("the CPU backend declined ReluBiasBackward");
    return;
  }
  composed();
  std::vector<double> fused_s, composed_s;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    fused();
    fused_s.push_back(Seconds(std::chrono::steady_clock::now() - start));
    state.PauseTiming();
    start = std::chrono::steady_clock::now();
    composed();
    composed_s.push_back(Seconds(std::chrono::steady_clock::now() - start));
    state.ResumeTiming();
  }
  state.counters["fused_us"] = Median(fused_s) * 1e6;
  state.counters["composed_us"] = Median(composed_s) * 1e6;
  state.counters["fused_vs_composed"] = Median(fused_s) / Median(composed_s);
}
BENCHMARK(BM_ReluBiasBackward)
    ->Args({128, 256})
    ->Args({256, 256})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// PeerBlasThreads: the peer calls OpenBLAS with its own thread pool at the
// thread count Kindling uses. Kindling's matmul() sets OpenBLAS to one thread
// on first use (it splits GEMMs over its own pool, backend/cpu/matmul.cc),
// which would otherwise leave the peer single-threaded after the first
// matmul() and flatter the ratio.
class PeerBlasThreads {
 public:
  PeerBlasThreads() { openblas_set_num_threads(cpu::MaxThreads()); }
  ~PeerBlasThreads() { openblas_set_num_threads(1); }
};

void BM_CblasSgemm(benchmark::State& state) {
  const int n = kMatmulSize;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  const PeerBlasThreads peer_threads;
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
    const PeerBlasThreads peer_threads;
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

int main(int argc, char** argv) {
  return kindling::bench::PeerBenchmarkMain(argc, argv);
}
