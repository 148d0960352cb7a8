// CudaBackend against the CPU backend: Reductions along every axis, long lines
// split over blocks, softmax and log-softmax.
// (tests/backend/cuda/backend_test_support.h says how cases compare.)
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

TEST_F(CudaBackendTest, ReductionsMatchAlongEveryAxis) {
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kMean,   ReduceOp::kMax,
                          ReduceOp::kMin, ReduceOp::kArgMax, ReduceOp::kArgMin};
  for (DType dtype : {DType::kF32, DType::kF64, DType::kI64, DType::kI32}) {
    for (ReduceOp op : ops) {
      for (int axis = 0; axis < 3; ++axis) {
        for (bool transposed : {false, true}) {
          auto [cpu, gpu] = Both([&](const Device& device) {
            // Integer-valued inputs in a small range make ties for argmax.
            TensorBase in = Input({7, 300, 5}, dtype, 16, device, -20, 20);
            if (transposed)
              in = in.Transpose(0, 2).Contiguous().Transpose(0, 2);
            Shape out_shape = in.shape();
            out_shape[axis] = 1;
            const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
            const TensorBase out =
                TensorBase::Empty(out_shape, arg ? DType::kI64 : dtype, device);
            GetBackend(device).Reduce(op, out, in, axis);
            return out;
          });
          const std::string what =
              "reduce " + std::to_string(static_cast<int>(op)) + " " +
              Name(dtype) + " axis " + std::to_string(axis) +
              (transposed ? " transposed" : "");
          ExpectClose(cpu, gpu, ToleranceOf(cpu.dtype()), what);
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, LongRowReductionsAndNaNs) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kArgMax, ReduceOp::kArgMin}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      TensorBase in = Input({3, 100003}, DType::kF32, 17, device);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      // A NaN in row 1 at two places: the first one wins.
      const TensorBase nans =
          TensorBase::FromHost(&nan, {}, DType::kF32, kCpu).ToDevice(device);
      GetBackend(device).Copy(
          in.Narrow(0, 1, 1).Narrow(1, 777, 1).Squeeze(0).Squeeze(0), nans);
      GetBackend(device).Copy(
          in.Narrow(0, 1, 1).Narrow(1, 9999, 1).Squeeze(0).Squeeze(0), nans);
      const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
      const TensorBase out =
          TensorBase::Empty({3, 1}, arg ? DType::kI64 : DType::kF32, device);
      GetBackend(device).Reduce(op, out, in, 1);
      return out;
    });
    ExpectClose(cpu, gpu, {1e-6, 1e-4}, "long row reduce");
  }
}

TEST_F(CudaBackendTest, VeryLongLinesSplitOverBlocksMatchTheCpu) {
  // Few lines far longer than a block: each is split into chunks reduced by
  // separate blocks and combined in chunk order. Planted values: the extreme
  // twice (the first wins for the arg ops), and a strictly larger one in
  // the last, shorter chunk in the "last" variant, so a dropped chunk shows.
  struct Case {
    Shape shape;
    int axis;
    bool extreme_in_last_chunk;
  };
  const Case cases[] = {{{1, 5000003}, 1, false},
                        {{1, 5000003}, 1, true},
                        {{3, 400001}, 1, false},
                        {{5000003, 3}, 0, true}};  // strided lines
  for (const Case& c : cases) {
    const int64_t n = c.shape[c.axis];
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax,
                        ReduceOp::kMin, ReduceOp::kArgMax, ReduceOp::kArgMin}) {
      const bool low = op == ReduceOp::kMin || op == ReduceOp::kArgMin;
      auto [cpu, gpu] = Both([&](const Device& device) {
        TensorBase in = Input(c.shape, DType::kF32, 31, device);
        const auto plant = [&](int64_t at, float value) {
          const TensorBase scalar =
              TensorBase::FromHost(&value, {}, DType::kF32, kCpu)
                  .ToDevice(device);
          TensorBase cell = in.Narrow(c.axis, at, 1).Narrow(1 - c.axis, 0, 1);
          GetBackend(device).Copy(cell.Squeeze(0).Squeeze(0), scalar);
        };
        plant(333333, low ? -5.0f : 5.0f);
        plant(n - 7, low ? -5.0f : 5.0f);
        if (c.extreme_in_last_chunk) plant(n - 2, low ? -6.0f : 6.0f);
        const bool arg = op == ReduceOp::kArgMax || op == ReduceOp::kArgMin;
        Shape out_shape = c.shape;
        out_shape[c.axis] = 1;
        const TensorBase out = TensorBase::Empty(
            out_shape, arg ? DType::kI64 : DType::kF32, device);
        GetBackend(device).Reduce(op, out, in, c.axis);
        return out;
      });
      const std::string what =
          "split reduce op " + std::to_string(static_cast<int>(op)) + " " +
          c.shape.ToString() + " axis " + std::to_string(c.axis);
      if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
        ExpectClose(cpu, gpu, {1e-6, 1e-6}, what);
      } else {
        ExpectBitEqual(cpu, gpu, what);
      }
    }
  }
  // NaNs in two chunks: the first NaN wins max and argmax.
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kArgMax}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      TensorBase in = Input({1, 3000001}, DType::kF32, 33, device);
      const float nan = std::numeric_limits<float>::quiet_NaN();
      const TensorBase nans =
          TensorBase::FromHost(&nan, {}, DType::kF32, kCpu).ToDevice(device);
      for (int64_t at : {int64_t{2000000}, int64_t{1000}}) {
        GetBackend(device).Copy(in.Narrow(1, at, 1).Squeeze(0).Squeeze(0),
                                nans);
      }
      const TensorBase out = TensorBase::Empty(
          {1, 1}, op == ReduceOp::kArgMax ? DType::kI64 : DType::kF32, device);
      GetBackend(device).Reduce(op, out, in, 1);
      return out;
    });
    ExpectBitEqual(cpu, gpu,
                   "split NaN " + std::to_string(static_cast<int>(op)));
  }
  // Integer sums wrap identically; f64 sums agree to rounding.
  for (DType dtype : {DType::kI64, DType::kF64}) {
    const Shape shape = {2, 700001};
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase in = Input(shape, dtype, 32, device, -100, 100);
      const TensorBase out = TensorBase::Empty({2, 1}, dtype, device);
      GetBackend(device).Reduce(ReduceOp::kSum, out, in, 1);
      return out;
    });
    const Tolerance tol =
        dtype == DType::kF64
            ? SumTolerance(Doubles(Input(shape, dtype, 32, kCpu, -100, 100)),
                           shape[1])
            : ToleranceOf(dtype);
    ExpectClose(cpu, gpu, tol, "split sum " + Name(dtype));
  }
  // f16: the split sums accumulate in f32, as the CPU's f32 sum of the
  // widened values does (compare within f16 rounding).
  const TensorBase half_cpu = Input({1, 2000001}, DType::kF16, 34, kCpu);
  const TensorBase expected = TensorBase::Empty({1, 1}, DType::kF32, kCpu);
  GetBackend(kCpu).Reduce(ReduceOp::kSum, expected, half_cpu.To(DType::kF32),
                          1);
  const TensorBase half_sum = TensorBase::Empty({1, 1}, DType::kF16, kGpu);
  GetBackend(kGpu).Reduce(ReduceOp::kSum, half_sum, half_cpu.ToDevice(kGpu), 1);
  ExpectClose(expected.To(DType::kF16), half_sum, {2e-3, 0.5}, "split f16 sum");
}

TEST_F(CudaBackendTest, HalfReductionsAccumulateInFloat) {
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    // The CPU computes 16-bit reductions in f32: compare with that.
    const TensorBase in_cpu = Input({64, 4000}, dtype, 18, kCpu);
    const TensorBase widened = in_cpu.To(DType::kF32);
    const TensorBase expected = TensorBase::Empty({64, 1}, DType::kF32, kCpu);
    GetBackend(kCpu).Reduce(ReduceOp::kSum, expected, widened, 1);
    const TensorBase in_gpu = in_cpu.ToDevice(kGpu);
    const TensorBase out = TensorBase::Empty({64, 1}, dtype, kGpu);
    GetBackend(kGpu).Reduce(ReduceOp::kSum, out, in_gpu, 1);
    ExpectClose(expected.To(dtype), out, ToleranceOf(dtype), "half sum");
  }
}

TEST_F(CudaBackendTest, SoftmaxAndLogSoftmaxAlongLastAndMiddleAxes) {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    for (bool log : {false, true}) {
      // [64, 5000] and [3, 7, 1028] along the last axis take the f32 rows
      // read once as float4; [5, 20000] is too long for its cache.
      for (const Shape& shape :
           {Shape{64, 5000}, Shape{300, 10}, Shape{6, 70, 9}, Shape{3, 7, 1028},
            Shape{5, 20000}}) {
        for (int axis = 0; axis < shape.rank(); ++axis) {
          auto [cpu, gpu] = Both([&](const Device& device) {
            const TensorBase in = Input(shape, dtype, 19, device, -30, 30);
            const TensorBase out = TensorBase::Empty(shape, dtype, device);
            GetBackend(device).Softmax(out, in, axis, log);
            return out;
          });
          ExpectClose(cpu, gpu, {1e-5, 1e-6},
                      "softmax " + Name(dtype) + " " + shape.ToString() +
                          " axis " + std::to_string(axis));
        }
      }
    }
  }
  // A row of -inf stays finite (max treated as 0).
  auto [cpu, gpu] = Both([&](const Device& device) {
    const double values[] = {-INFINITY, -INFINITY, -INFINITY, 1, 2, 3};
    const TensorBase in =
        TensorBase::FromHost(values, {2, 3}, DType::kF64, kCpu)
            .To(DType::kF32)
            .ToDevice(device);
    const TensorBase out = TensorBase::Empty({2, 3}, DType::kF32, device);
    GetBackend(device).Softmax(out, in, 1, false);
    return out;
  });
  ExpectClose(cpu, gpu, {1e-6, 1e-7}, "softmax of -inf");
  // The same, and a NaN, on rows of the float4 path; and a view whose rows
  // start one element in (not 16-byte aligned: the general path).
  for (int64_t start : {0, 1}) {
    for (bool log : {false, true}) {
      auto [cpu_rows, gpu_rows] = Both([&](const Device& device) {
        std::vector<double> values(3 * 64 + 1);
        for (size_t i = 0; i < values.size(); ++i) values[i] = i % 7 - 3.0;
        for (int k = 0; k < 64; ++k) values[start + k] = -INFINITY;
        values[start + 64 + 5] = NAN;
        const TensorBase in =
            TensorBase::FromHost(values.data(), {3 * 64 + 1}, DType::kF64, kCpu)
                .To(DType::kF32)
                .ToDevice(device)
                .Narrow(0, start, 3 * 64)
                .Reshape({3, 64});
        const TensorBase out = TensorBase::Empty({3, 64}, DType::kF32, device);
        GetBackend(device).Softmax(out, in, 1, log);
        return out;
      });
      ExpectClose(cpu_rows, gpu_rows, {1e-6, 1e-7},
                  "softmax rows with -inf and NaN, start " +
                      std::to_string(start) + (log ? " log" : ""));
    }
  }
}

}  // namespace
}  // namespace kindling::cuda_test
