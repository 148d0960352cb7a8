// oneDNN 2.6's generated sgemm kernels (what its matmul runs as "gemm:jit"
// for some layouts on AVX-512, and for every product on AVX2) point the
// stack pointer into their heap workspace while they run (oneDNN issue
// #4845, fixed upstream after 3.11): a signal handled on that thread writes
// its frame into the heap. A training run that gets SIGTERM (preemption) or
// a profiler's SIGPROF then crashed later in free(). Kindling defers
// asynchronous signals while a oneDNN primitive runs (onednn_common.h's
// SignalsDeferred); this test aims a storm of signals at a thread running
// such products and checks every product and the heap.
#include <cblas.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/onednn_common.h"
#include "kindling/backend/cpu/onednn_gemm.h"

namespace kindling::cpu {
namespace {

std::atomic<int64_t> signals_handled{0};

extern "C" void CountSignal(int) {
  signals_handled.fetch_add(1, std::memory_order_relaxed);
}

struct Layout {
  int64_t m, n, k, ldb;
};

class OneDnnUnderSignals : public ::testing::TestWithParam<Layout> {};

TEST_P(OneDnnUnderSignals, ProductsAndTheHeapSurviveASignalStorm) {
  const auto [m, n, k, ldb] = GetParam();
  struct sigaction action = {};
  action.sa_handler = CountSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction previous;
  ASSERT_EQ(sigaction(SIGUSR2, &action, &previous), 0);

  std::mt19937 random(11);
  std::uniform_real_distribution<float> value(-1, 1);
  std::vector<float> a(m * k), b(k * ldb);
  for (float& x : a) x = value(random);
  for (float& x : b) x = value(random);
  std::vector<float> expected(m * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
              a.data(), k, b.data(), ldb, 0.0f, expected.data(), n);

  std::atomic<bool> done{false};
  const pthread_t target = pthread_self();
  std::thread storm([&] {
    while (!done.load()) {
      pthread_kill(target, SIGUSR2);
      usleep(20);
    }
  });
  const int64_t signals_before = signals_handled.load();
  std::vector<float> c(m * n);
  int64_t products = 0;
  float worst = 0;
  for (int call = 0; call < 3000; ++call) {
    std::fill(c.begin(), c.end(), 0.0f);
    if (!OneDnnSgemm(false, false, m, n, k, a.data(), k, b.data(), ldb,
                     c.data(), n, false)) {
      continue;  // the shape's first call is OpenBLAS's
    }
    ++products;
    for (int64_t i = 0; i < m * n; ++i) {
      worst = std::max(worst, std::abs(c[i] - expected[i]));
    }
    // Heap traffic between products: a corrupted heap aborts here.
    auto scratch = std::make_unique<std::vector<double>>(1000 + call % 97);
    (*scratch)[call % 1000] = call;
  }
  done.store(true);
  storm.join();
  ASSERT_EQ(sigaction(SIGUSR2, &previous, nullptr), 0);

  EXPECT_GT(products, 2900);
  EXPECT_LT(worst, 1e-3) << "a product was corrupted";
  EXPECT_GT(signals_handled.load() - signals_before, 100)
      << "the storm did not reach the thread: the test proved nothing";
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, OneDnnUnderSignals,
    ::testing::Values(
        // A column slab of a wider matrix (ldb > n, b not transposed): the
        // layout ParallelGemm hands oneDNN when it splits columns, for
        // which oneDNN 2.6's matmul picks its generated sgemm even on
        // AVX-512 (on AVX2 every layout does).
        Layout{128, 392, 256, 784},
        // A plain product: brgemm on AVX-512, which runs unguarded there.
        Layout{128, 256, 784, 256}));

// IsBlocked() is whether this thread now blocks SIGTERM.
bool IsBlocked() {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, SIGTERM) == 1;
}

TEST(SignalsDeferredTest, GuardsNestAndTheOutermostRestoresTheMask) {
  ASSERT_FALSE(IsBlocked());
  {
    const SignalsDeferred outer;
    EXPECT_TRUE(IsBlocked());
    {
      const SignalsDeferred inner;
      EXPECT_TRUE(IsBlocked());
    }
    EXPECT_TRUE(IsBlocked()) << "the inner guard unblocked the outer's";
    // A product inside the outer guard leaves the mask to it.
    std::vector<float> a(64 * 64, 1.0f), c(64 * 64);
    ASSERT_TRUE(OneDnnSgemm(false, false, 64, 64, 64, a.data(), 64, a.data(),
                            64, c.data(), 64, false));
    EXPECT_EQ(64.0f, c[0]);
    EXPECT_TRUE(IsBlocked());
  }
  EXPECT_FALSE(IsBlocked());
  // SIGSEGV and its kind stay deliverable under a guard.
  const SignalsDeferred guard;
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  EXPECT_EQ(0, sigismember(&mask, SIGSEGV));
}

}  // namespace
}  // namespace kindling::cpu
