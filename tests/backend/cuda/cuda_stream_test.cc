// CudaBackend against the CPU backend: Blocks used on a second stream are not
// reused before the read. (tests/backend/cuda/backend_test_support.h says how
// cases compare.)
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"
#include "tests/backend/cuda/test_kernels.h"

namespace kindling::cuda_test {
namespace {

// --- Streams: blocks used on a second stream ---------------------------------

// A tensor read by a kernel on a second stream is freed while that kernel is
// still queued: the next same-size tensor on the default stream, written at
// once, must not get its block, or the read would see the new values.
TEST_F(CudaBackendTest, TensorReadOnASecondStreamIsNotReusedBeforeTheRead) {
  const Shape shape{1 << 20};
  TensorBase source = Input(shape, DType::kF32, 41, kGpu);
  // Waits for `source` on the default stream, so the side stream can read it.
  const std::vector<uint8_t> expected = Bytes(source);
  TensorBase copy = TensorBase::Empty(shape, DType::kF32, kGpu);
  cuda::CudaDeviceGuard device(0);
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking),
            cudaSuccess);
  {
    cuda::CudaStreamGuard guard(0, side);
    // The copy starts reading only after 200 ms.
    cuda::testing::LaunchSpin(200'000'000, side);
    GetBackend(kGpu).Copy(copy, source);
  }
  source = TensorBase();  // frees its block
  const TensorBase next = TensorBase::Empty(shape, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(next, -1e6);
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  EXPECT_EQ(expected, Bytes(copy));
  // Freed before its stream is destroyed: the free records an event there.
  copy = TensorBase();
  EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  ASSERT_EQ(cudaStreamDestroy(side), cudaSuccess);
}

}  // namespace
}  // namespace kindling::cuda_test
