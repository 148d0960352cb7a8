// oneDNN runs only on Kindling's pool: its convolutions and products, built
// and run from the pool's slabs, start no OpenMP threads of their own
// (onednn_common.h's OneDnnOnOneThread). oneDNN 2.6 sizes a blocked
// convolution's thread team when the primitive is created, so a plan built
// while the calling thread's OpenMP setting allowed two threads started a
// team of two from each slab on every call: four busy threads on two cores.
//
// A test binary of its own: the count of the process's threads is the
// observable, and nothing else here may start OpenMP.
#include <dirent.h>
#include <omp.h>

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cpu/onednn_conv2d.h"
#include "kindling/backend/cpu/onednn_gemm.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/tensor/tensor.h"

namespace kindling::cpu {
namespace {

// ThreadCount() is how many threads the process has (/proc/self/task).
int ThreadCount() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(tasks);
  return count;
}

TensorBase Filled(const Shape& shape, float value) {
  const std::vector<float> values(shape.num_elements(), value);
  return TensorBase::FromHost(values.data(), shape, DType::kF32, Device::Cpu());
}

TEST(OneDnnThreadsTest, ConvolutionsAndProductsStartNoThreadsOfTheirOwn) {
  omp_set_num_threads(2);  // a pool of two threads, as on a 2-core machine
  ASSERT_EQ(MaxThreads(), 2);
  // Starts the pool's worker: a loop split across both threads.
  ParallelFor(int64_t{1} << 20, 1, [](int64_t, int64_t) {});
  const int before = ThreadCount();
  ASSERT_GT(before, 0);

  // The example CNN's second convolution at a batch of 4 (two samples per
  // slab): oneDNN's blocked kernels, forward and every gradient.
  const Window2dGeometry window{.kernel = {3, 3}, .padding = {1, 1}};
  const TensorBase input = Filled({4, 32, 14, 14}, 0.5f);
  const TensorBase weight = Filled({64, 32, 3, 3}, 0.25f);
  const TensorBase bias = Filled({64}, 1.0f);
  const TensorBase out =
      TensorBase::Empty({4, 64, 14, 14}, DType::kF32, Device::Cpu());
  ASSERT_TRUE(OneDnnConv2d(out, input, weight, bias, window));
  const TensorBase input_grad =
      TensorBase::Empty(input.shape(), DType::kF32, Device::Cpu());
  const TensorBase weight_grad =
      TensorBase::Empty(weight.shape(), DType::kF32, Device::Cpu());
  const TensorBase bias_grad =
      TensorBase::Empty(bias.shape(), DType::kF32, Device::Cpu());
  ASSERT_TRUE(OneDnnConv2dBackward(input_grad, weight_grad, bias_grad,
                                   Filled(out.shape(), 1.0f), input, weight,
                                   window));
  // Every output cell sees 3 x 3 x 32 products of 0.5 x 0.25 away from the
  // border, plus the bias.
  std::vector<float> values(out.shape().num_elements());
  out.CopyToHost(values.data());
  EXPECT_FLOAT_EQ(values[14 + 1], 9 * 32 * 0.125f + 1.0f);

  // A product through oneDNN's matmul, on each thread of the pool.
  std::vector<float> a(256 * 128, 1.0f), b(128 * 256, 1.0f);
  std::vector<float> c(2 * 256 * 256);
  ParallelSlabs(2, [&](int64_t slab) {
    ASSERT_TRUE(OneDnnSgemm(false, false, 256, 256, 128, a.data(), 128,
                            b.data(), 256, c.data() + slab * 256 * 256, 256,
                            false));
  });
  EXPECT_EQ(c[0], 128.0f);

  EXPECT_EQ(ThreadCount(), before)
      << "oneDNN started threads of its own next to the pool's";
}

}  // namespace
}  // namespace kindling::cpu
