#include "kindling/backend/cpu/onednn_gemm.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kindling/backend/cpu/onednn_common.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace kindling::cpu {
namespace {

using dnnl::memory;

constexpr int64_t kMinSide = 16;
constexpr int64_t kMinWork = int64_t{1} << 15;
constexpr size_t kMaxShapes = 256;

struct GemmKey {
  int64_t m, n, k, lda, ldb, ldc;
  bool transpose_a, transpose_b, accumulate;

  bool operator==(const GemmKey&) const = default;
};

struct GemmKeyHash {
  size_t operator()(const GemmKey& key) const {
    size_t hash = 0;
    for (const int64_t value :
         {key.m, key.n, key.k, key.lda, key.ldb, key.ldc,
          int64_t{key.transpose_a} | int64_t{key.transpose_b} << 1 |
              int64_t{key.accumulate} << 2}) {
      hash = hash * 1000003 ^ std::hash<int64_t>()(value);
    }
    return hash;
  }
};

// GemmPlan: one shape's matmul primitive and the memory objects each call
// points at its operands (set_data_handle costs nanoseconds; making new
// memory objects about a microsecond).
struct GemmPlan {
  dnnl::matmul matmul;
  memory a, b, c, scratchpad;
  // args: the four above by argument, built once (a map built per call cost
  // a malloc per node; the entries are handles to the same objects).
  std::unordered_map<int, memory> args;
  // defer_signals: the primitive runs oneDNN's generated sgemm, which must
  // not take a signal (onednn_common.h's SignalsDeferred).
  bool defer_signals = false;
};

// ThreadPlans: this thread's plan for each shape it has run, null where
// oneDNN could not build one (OpenBLAS from then on).
struct ThreadPlans {
  std::unordered_map<GemmKey, std::unique_ptr<GemmPlan>, GemmKeyHash> by_shape;
  std::optional<dnnl::stream> stream;
};

ThreadPlans& PlansOfThisThread() {
  thread_local ThreadPlans plans;
  return plans;
}

// Admitted() is whether `key` is one of the first kMaxShapes shapes the
// process offered oneDNN. Deciding by the shape alone, the same on every
// thread, keeps training deterministic: which pool thread computes a slab
// changes from run to run, and a per-thread rule sent the same slab to
// OpenBLAS in one run and to oneDNN in the next, changing the rounding.
bool Admitted(const GemmKey& key) {
  static std::mutex mutex;
  static auto* shapes = new std::unordered_set<GemmKey, GemmKeyHash>;
  std::lock_guard<std::mutex> lock(mutex);
  if (shapes->contains(key)) return true;
  if (shapes->size() >= kMaxShapes) return false;
  shapes->insert(key);
  return true;
}

// Matrix() describes a rows x cols operand of a row-major buffer with
// leading dimension ld, stored transposed (as cols x rows) if `transposed`.
memory::desc Matrix(int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

std::unique_ptr<GemmPlan> BuildPlan(const GemmKey& key) {
  dnnl::primitive_attr attr = OneDnnUserScratchpad();
  if (key.accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const memory::desc a = Matrix(key.m, key.k, key.lda, key.transpose_a);
  const memory::desc b = Matrix(key.k, key.n, key.ldb, key.transpose_b);
  const memory::desc c = Matrix(key.m, key.n, key.ldc, false);
  const dnnl::matmul::primitive_desc desc(dnnl::matmul::desc(a, b, c), attr,
                                          OneDnnEngine());
  auto plan = std::make_unique<GemmPlan>();
  plan->matmul = dnnl::matmul(desc);
  plan->a = memory(a, OneDnnEngine(), DNNL_MEMORY_NONE);
  plan->b = memory(b, OneDnnEngine(), DNNL_MEMORY_NONE);
  plan->c = memory(c, OneDnnEngine(), DNNL_MEMORY_NONE);
  plan->scratchpad = memory(desc.scratchpad_desc(), OneDnnEngine());
  plan->defer_signals = UsesGeneratedSgemm(desc);
  plan->args = {{DNNL_ARG_SRC, plan->a},
                {DNNL_ARG_WEIGHTS, plan->b},
                {DNNL_ARG_DST, plan->c},
                {DNNL_ARG_SCRATCHPAD, plan->scratchpad}};
  return plan;
}

// PlanFor() is the thread's plan for `key`, built on the thread's first
// call of an admitted shape, or null where OpenBLAS runs it.
GemmPlan* PlanFor(ThreadPlans& plans, const GemmKey& key) {
  if (auto it = plans.by_shape.find(key); it != plans.by_shape.end()) {
    return it->second.get();
  }
  if (!Admitted(key)) return nullptr;  // not remembered: the set is full
  std::unique_ptr<GemmPlan>& plan = plans.by_shape[key];
  try {
    plan = BuildPlan(key);
  } catch (const dnnl::error&) {
    // Refused: the same on every thread, so still one library per shape.
  }
  return plan.get();
}

// Dense() is whether a rows x cols operand with leading dimension ld
// (stored as cols x rows if `transposed`) has no gap between its rows.
bool Dense(int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return ld == (transposed ? rows : cols) || (transposed ? cols : rows) == 1;
}

// DirectSgemm() is oneDNN's BLAS-style dnnl_sgemm (row-major), which runs
// the same generated kernels as the matmul primitive's "gemm:jit" without a
// primitive. Given operands with gaps between their rows (the attention's
// heads read in place from [B, T, H, D]), the matmul primitive leaves its
// brgemm kernel for a slower one while dnnl_sgemm keeps its rate (one
// thread, rows 128 floats apart, each call timed over 2000 repeats): q k^T
// of 128 x 128 x 32 at 192 GF/s on the primitive against 224, p v of
// 128 x 32 x 128 at 205 against 254, a 64 x 64 x 32 tile at 101 against
// 144. Sending the MLP's and the char-LM's slabs that have such gaps here
// left benches/gemm_bench's rates level (the MLP's first layer forward
// 454-456 GFLOP/s against 445-448 on 2 threads).
bool DirectSgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const SignalsDeferred signals_deferred;  // its generated sgemm
  return dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k,
                    1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c,
                    ldc) == dnnl_success;
}

}  // namespace

bool OneDnnSgemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (GetOneDnnMode() == OneDnnMode::kOff || m < kMinSide || n < kMinSide ||
      k < 1 || m * n * k < kMinWork) {
    return false;
  }
  // Built and run on one thread (onednn_common.h).
  const OneDnnOnOneThread one_thread;
  if (!Dense(m, k, lda, transpose_a) || !Dense(k, n, ldb, transpose_b) ||
      !Dense(m, n, ldc, false)) {
    return DirectSgemm(transpose_a, transpose_b, m, n, k, a, lda, b, ldb, c,
                       ldc, accumulate);
  }
  ThreadPlans& plans = PlansOfThisThread();
  GemmPlan* plan = PlanFor(
      plans, {m, n, k, lda, ldb, ldc, transpose_a, transpose_b, accumulate});
  if (plan == nullptr) return false;
  if (!plans.stream.has_value()) plans.stream.emplace(OneDnnEngine());
  plan->a.set_data_handle(const_cast<float*>(a));
  plan->b.set_data_handle(const_cast<float*>(b));
  plan->c.set_data_handle(c);
  std::optional<SignalsDeferred> signals_deferred;
  if (plan->defer_signals) signals_deferred.emplace();
  plan->matmul.execute(*plans.stream, plan->args);
  plans.stream->wait();
  return true;
}

}  // namespace kindling::cpu
