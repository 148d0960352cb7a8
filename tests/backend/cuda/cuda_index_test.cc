// CudaBackend against the CPU backend: Index select, gather, scatter-add and
// one-hot, and out-of-range indices reported at the next synchronize.
// (tests/backend/cuda/backend_test_support.h says how cases compare.)
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/index_ops.h"
#include "kindling/tensor/ops.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

// Indices(): `values` as an index tensor of `dtype` on `device`.
TensorBase Indices(const std::vector<int64_t>& values, const Shape& shape,
                   DType dtype, const Device& device) {
  return TensorBase::FromHost(values.data(), shape, DType::kI64, kCpu)
      .To(dtype)
      .ToDevice(device);
}

TEST_F(CudaBackendTest, IndexSelectGatherAndScatterAdd) {
  for (DType index_dtype : {DType::kI64, DType::kI32}) {
    for (DType dtype :
         {DType::kF32, DType::kF64, DType::kF16, DType::kI64, DType::kU8}) {
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase in = Input({9, 6, 5}, dtype, 22, device, -50, 50)
                                  .Transpose(0, 2);  // [5, 6, 9]
        const TensorBase index =
            Indices({5, 0, 5, 8, 1, 2, 2}, {7}, index_dtype, device);
        const TensorBase out = TensorBase::Empty({5, 6, 7}, dtype, device);
        GetBackend(device).IndexSelect(out, in, 2, index);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "index_select " + Name(dtype));
    }
    std::vector<int64_t> picks(4 * 3 * 6);
    std::mt19937 rng(23);
    for (int64_t& pick : picks) pick = rng() % 8;
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input({4, 8, 6}, DType::kF32, 24, device);
      const TensorBase index = Indices(picks, {4, 3, 6}, index_dtype, device);
      const TensorBase out = TensorBase::Empty({4, 3, 6}, DType::kF32, device);
      GetBackend(device).Gather(out, in, 1, index);
      return out;
    });
    ExpectBitEqual(cpu, gpu, "gather");
    for (DType dtype : {DType::kF32, DType::kF64}) {
      auto [cpu_sum, gpu_sum] = Both([&](const Device& device) {
        const TensorBase src =
            Input({6, 3, 4}, dtype, 25, device).Transpose(0, 2);  // [4, 3, 6]
        const TensorBase index = Indices(picks, {4, 3, 6}, index_dtype, device);
        const TensorBase out = Input({4, 8, 6}, dtype, 26, device);
        GetBackend(device).ScatterAdd(out, 1, index, src);
        return out;
      });
      ExpectClose(cpu_sum, gpu_sum, ToleranceOf(dtype), "scatter_add");
    }
  }
}

// ExpectFault() checks that the next synchronization reports `message`
// (and only once).
void ExpectFault(const std::string& message) {
  const absl::Status status = cuda::SynchronizeCudaDevice(0);
  EXPECT_EQ(absl::StatusCode::kOutOfRange, status.code()) << status;
  EXPECT_NE(std::string(status.message()).find(message), std::string::npos)
      << status;
  EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
}

TEST_F(CudaBackendTest, OutOfRangeIndicesSurfaceAtTheNextSynchronize) {
  ASSERT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  // The table is rows 0..3 of a larger tensor of values in [1, 2): a kernel
  // reading a bad row would find non-zero data there, not the zeros the
  // guarded kernels write.
  const TensorBase big = Input({16, 3}, DType::kF32, 27, kGpu, 1, 2);
  const TensorBase table = big.Narrow(0, 0, 4);
  const std::vector<double> values = Doubles(table);

  // index_select's own check (no CheckIndices first).
  const TensorBase out = TensorBase::Empty({3, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).IndexSelect(out, table, 0,
                               Indices({1, 9, 2}, {3}, DType::kI64, kGpu));
  ExpectFault("index_select: index 9 out of range [0, 4) on cuda:0");
  const std::vector<double> rows = Doubles(out);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(values[3 + j], rows[j]);
    EXPECT_EQ(0.0, rows[3 + j]);
    EXPECT_EQ(values[6 + j], rows[6 + j]);
  }

  // Through the front end, which leaves the check to these kernels
  // (IndexKernelsCheckRange): the same report, one launch.
  EXPECT_TRUE(GetBackend(kGpu).IndexKernelsCheckRange());
  const TensorBase picked =
      ops::IndexSelect(table, 0, Indices({4}, {1}, DType::kI64, kGpu));
  ExpectFault("index_select: index 4 out of range [0, 4) on cuda:0");
  EXPECT_EQ(std::vector<double>(3, 0.0), Doubles(picked));

  // gather with a transposed (strided) i32 index holding one bad entry.
  const std::vector<int64_t> picks = {0, 3, 1, 2, 1, 7, 1, 2, 2, 0, 1, 3};
  const TensorBase index =
      Indices(picks, {3, 4}, DType::kI32, kGpu).Transpose(0, 1);  // [4, 3]
  const TensorBase gathered = TensorBase::Empty({4, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).Gather(gathered, table, 0, index);
  ExpectFault("gather: index 7 out of range [0, 4) on cuda:0");
  const std::vector<double> got = Doubles(gathered);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int64_t pick = picks[j * 4 + i];
      EXPECT_EQ(pick < 4 ? values[pick * 3 + j] : 0.0, got[i * 3 + j])
          << i << "," << j;
    }
  }

  // scatter_add leaves the target of a bad index alone.
  const TensorBase target = Input({4, 3}, DType::kF32, 28, kGpu);
  const std::vector<double> before = Doubles(target);
  const TensorBase ones = TensorBase::Empty({2, 3}, DType::kF32, kGpu);
  GetBackend(kGpu).Fill(ones, 1.0);
  const std::vector<int64_t> rows_to = {3, 5, 0, 1, 1, 1};
  GetBackend(kGpu).ScatterAdd(
      target, 0, Indices(rows_to, {2, 3}, DType::kI64, kGpu), ones);
  ExpectFault("scatter_add: index 5 out of range [0, 4) on cuda:0");
  std::vector<double> want = before;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      const int64_t row = rows_to[i * 3 + j];
      if (row < 4) want[row * 3 + j] += 1.0;
    }
  }
  const std::vector<double> after = Doubles(target);
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_FLOAT_EQ(static_cast<float>(want[k]), static_cast<float>(after[k]))
        << k;
  }

  // CheckIndices alone (one_hot's check), i32 with a negative entry.
  GetBackend(kGpu).CheckIndices(Indices({0, -2, 1}, {3}, DType::kI32, kGpu), 3,
                                "one_hot");
  ExpectFault("one_hot: index -2 out of range [0, 3) on cuda:0");
}

}  // namespace
}  // namespace kindling::cuda_test
