// block_reduce.h: BlockAllReduce combines in thread order and gives every
// thread the same result, for block sizes from one warp to 1024 threads.
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/backend/cuda/backend_test_support.h"
#include "tests/backend/cuda/block_reduce_kernels.h"

namespace kindling::cuda_test {
namespace {

using ::kindling::cuda::testing::AffineMap;

TEST_F(CudaBackendTest, BlockAllReduceCombinesInThreadOrder) {
  std::mt19937 rng(7);
  for (int threads : {32, 64, 96, 256, 1024}) {
    std::vector<AffineMap> maps(threads);
    for (AffineMap& map : maps) {
      map = {static_cast<uint32_t>(rng()) | 1u, static_cast<uint32_t>(rng())};
    }
    // Map 0 first: the left-to-right composition.
    AffineMap expected = maps[0];
    for (int i = 1; i < threads; ++i) {
      expected = {maps[i].scale * expected.scale,
                  maps[i].scale * expected.shift + maps[i].shift};
    }
    std::vector<AffineMap> results(threads);
    cuda::testing::ComposeInBlock(maps.data(), threads, results.data());
    for (int i = 0; i < threads; ++i) {
      ASSERT_EQ(expected.scale, results[i].scale)
          << threads << " threads, thread " << i;
      ASSERT_EQ(expected.shift, results[i].shift)
          << threads << " threads, thread " << i;
    }
  }
}

}  // namespace
}  // namespace kindling::cuda_test
