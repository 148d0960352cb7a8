// Once warm, a training step of a small model faults in no fresh pages: its
// activations and gradients (128-784 KiB for this MLP) come back from the CPU
// allocator's cache rather than from glibc, which maps blocks of that size,
// or carves them from a heap top it trims, and so made the kernel zero and
// map about 480 pages a step (cpu_allocator.h).
#include <sys/resource.h>

#include <cstdint>
#include <vector>

#include "examples/mlp.kindling.h"
#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/module/initializer.h"
#include "kindling/nn/loss.h"
#include "kindling/optim/optimizer.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/tensor.h"
#include "kindling/train/threads.h"

// Sanitizers replace malloc with an allocator of their own (GCC and Clang
// announce them differently).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KINDLING_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KINDLING_UNDER_SANITIZER 1
#endif
#endif

namespace kindling {
namespace {

int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST(PageFaultsTest, MlpTrainingStepsFaultNoPagesOnceWarm) {
#ifdef KINDLING_UNDER_SANITIZER
  GTEST_SKIP() << "a sanitizer's allocator quarantines freed memory, so "
                  "every step maps fresh pages whatever Kindling caches";
#endif
  train::SetCpuThreads(2);
  SetInitSeed(1);
  examples::Mlp model = examples::MlpConfig{}.Init();
  absl::StatusOr<Optimizer> optimizer = Optimizer::Adam({.lr = 1e-3});
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  PhiloxGenerator generator(3);
  const Tensor<2> images = Tensor<2>::RandomNormal({128, 784}, generator);
  std::vector<int64_t> labels(128);
  for (int64_t i = 0; i < 128; ++i) labels[i] = i % 10;
  const Tensor<1, Int> targets =
      Tensor<1, Int>::FromData<int64_t>(labels, {128});
  auto step = [&] {
    const Tensor<0> loss = nn::CrossEntropy(model.Forward(images), targets);
    const Gradients grads = Backward(loss);
    ASSERT_TRUE(optimizer->Step(model, grads).ok());
  };
  // The first steps allocate the optimizer's state and fill the cache.
  for (int warm_up = 0; warm_up < 5; ++warm_up) step();
  constexpr int kSteps = 40;
  const int64_t before = MinorFaults();
  for (int i = 0; i < kSteps; ++i) step();
  const double faults_per_step =
      static_cast<double>(MinorFaults() - before) / kSteps;
  // A step touches about 3 MiB of blocks of 128 KiB and more (750 pages);
  // a few faults a step may come from malloc's small blocks.
  EXPECT_LT(faults_per_step, 16) << "minor page faults per training step";
}

}  // namespace
}  // namespace kindling
