// CudaBackend against the CPU backend: Sliding windows: Im2Col, Col2Im,
// MaxPool2d and its backward. (tests/backend/cuda/backend_test_support.h says
// how cases compare.)
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/backend/cuda/cuda_backend.h"
#include "kindling/backend/cuda/cuda_context.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/tensor_base.h"
#include "tests/backend/cuda/backend_test_support.h"

namespace kindling::cuda_test {
namespace {

// --- Sliding windows (Im2Col, Col2Im, MaxPool2d and its backward) ----------

struct WindowCase {
  Window2dGeometry window;
  int64_t height;
  int64_t width;
  std::string name;
};

// Windows with stride, padding, dilation, unequal axes, overlapping and
// disjoint positions, and positions that cover only padding ("all-padding":
// padding 3 with a 2x2 kernel at stride 3 puts the first row and column of
// positions entirely above and left of the input).
std::vector<WindowCase> WindowCases() {
  return {
      {{{3, 3}, {1, 1}, {1, 1}, {1, 1}}, 7, 6, "3x3 same"},
      {{{3, 2}, {2, 3}, {1, 0}, {2, 1}}, 9, 11, "stride dilation"},
      {{{2, 2}, {2, 2}, {0, 0}, {1, 1}}, 8, 6, "disjoint"},
      {{{2, 2}, {3, 3}, {3, 3}, {1, 1}}, 4, 5, "all-padding"},
      {{{1, 1}, {1, 1}, {2, 1}, {1, 1}}, 3, 3, "1x1 padded"},
  };
}

int64_t WindowOut(const Window2dGeometry& w, int axis, int64_t size) {
  return (size + 2 * w.padding[axis] - w.dilation[axis] * (w.kernel[axis] - 1) -
          1) /
             w.stride[axis] +
         1;
}

// WindowInput(): an [N, C, H, W] transposed view (strides [.., .., 1, H])
// of values from `seed`; with `ties`, small integers (many equal maxima)
// and a NaN at every 13th element.
TensorBase WindowInput(const WindowCase& c, DType dtype, uint32_t seed,
                       const Device& device, bool ties = false) {
  const Shape stored = {2, 3, c.width, c.height};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-3, 3);
  std::vector<double> values(stored.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = ties ? std::floor(uniform(rng)) : uniform(rng);
    if (ties && i % 13 == 5) values[i] = std::nan("");
  }
  return TensorBase::FromHost(values.data(), stored, DType::kF64, kCpu)
      .To(dtype)
      .ToDevice(device)
      .Transpose(2, 3);
}

// ColumnsView(): the layout the front end passes to Im2Col / Col2Im, a
// [N, C, K, OH, OW] permuted view of a contiguous [C, K, N, OH, OW] buffer.
TensorBase ColumnsView(const TensorBase& buffer) {
  const std::vector<int> to_nckhw = {2, 0, 1, 3, 4};
  return buffer.Permute(to_nckhw);
}

TEST_F(CudaBackendTest, Im2ColMatchesTheCpuOnStridedInputs) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t area = w.kernel[0] * w.kernel[1];
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase input = WindowInput(c, dtype, 60, device);
        const TensorBase buffer =
            TensorBase::Empty({3, area, 2, out_h, out_w}, dtype, device);
        GetBackend(device).Im2Col(ColumnsView(buffer), input, w, -1.5);
        return buffer;
      });
      ExpectBitEqual(cpu, gpu, "im2col " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, Col2ImSumsInTheCpuOrder) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t area = w.kernel[0] * w.kernel[1];
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      const std::string what = c.name + " " + Name(dtype);
      // The gather visits kernel entries in the CPU's order: bit-equal.
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase columns =
            ColumnsView(Input({3, area, 2, out_h, out_w}, dtype, 61, device));
        const TensorBase grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).Col2Im(grad, columns, w);
        return grad;
      });
      ExpectBitEqual(cpu, gpu, "col2im " + what);
      // Zero strides: one row of columns broadcast over every oh.
      auto [cpu_b, gpu_b] = Both([&](const Device& device) {
        const TensorBase columns =
            Input({2, 3, area, 1, out_w}, dtype, 62, device)
                .Expand({2, 3, area, out_h, out_w});
        const TensorBase grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).Col2Im(grad, columns, w);
        return grad;
      });
      ExpectBitEqual(cpu_b, gpu_b, "col2im broadcast " + what);
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dMatchesValuesArgmaxTiesAndNaNs) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const Shape out_shape = {2, 3, WindowOut(w, 0, c.height),
                               WindowOut(w, 1, c.width)};
      const std::string what = c.name + " " + Name(dtype);
      for (bool ties : {false, true}) {
        for (PoolActivation activation :
             {PoolActivation::kNone, PoolActivation::kRelu}) {
          TensorBase cpu_argmax, gpu_argmax;
          auto [cpu, gpu] = Both([&](const Device& device) {
            const TensorBase input = WindowInput(c, dtype, 63, device, ties);
            const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
            const TensorBase argmax =
                TensorBase::Empty(out_shape, DType::kI64, device);
            GetBackend(device).MaxPool2d(out, argmax, input, w, activation);
            (device == kCpu ? cpu_argmax : gpu_argmax) = argmax;
            return out;
          });
          const std::string label =
              what + (ties ? " ties+nan" : "") +
              (activation == PoolActivation::kRelu ? " relu" : "");
          ExpectBitEqual(cpu, gpu, "max_pool2d " + label);
          ExpectBitEqual(cpu_argmax, gpu_argmax, "max_pool2d argmax " + label);
        }
      }
      // Without argmax: the same values.
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase input = WindowInput(c, dtype, 64, device, true);
        const TensorBase out = TensorBase::Empty(out_shape, dtype, device);
        GetBackend(device).MaxPool2d(out, TensorBase(), input, w,
                                     PoolActivation::kNone);
        return out;
      });
      ExpectBitEqual(cpu, gpu, "max_pool2d without argmax " + what);
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dAllPaddingWindowsGiveMinusInfinity) {
  // Input 3x3, kernel 1, padding 2: 7x7 positions, the border two deep
  // covering padding only.
  const Window2dGeometry w = {{1, 1}, {1, 1}, {2, 2}, {1, 1}};
  const TensorBase input = Input({1, 1, 3, 3}, DType::kF32, 65, kGpu);
  const TensorBase out = TensorBase::Empty({1, 1, 7, 7}, DType::kF32, kGpu);
  const TensorBase argmax = TensorBase::Empty({1, 1, 7, 7}, DType::kI64, kGpu);
  GetBackend(kGpu).MaxPool2d(out, argmax, input, w, PoolActivation::kNone);
  const std::vector<double> values = Doubles(out);
  const std::vector<double> cells = Doubles(argmax);
  const std::vector<double> in = Doubles(input);
  for (int64_t oh = 0; oh < 7; ++oh) {
    for (int64_t ow = 0; ow < 7; ++ow) {
      const int64_t at = oh * 7 + ow;
      const bool inside = oh >= 2 && oh < 5 && ow >= 2 && ow < 5;
      if (inside) {
        const int64_t cell = (oh - 2) * 3 + (ow - 2);
        EXPECT_EQ(cell, cells[at]) << oh << "," << ow;
        EXPECT_EQ(in[cell], values[at]) << oh << "," << ow;
      } else {
        EXPECT_EQ(-1, cells[at]) << oh << "," << ow;
        EXPECT_EQ(-std::numeric_limits<double>::infinity(), values[at])
            << oh << "," << ow;
      }
    }
  }
}

TEST_F(CudaBackendTest, MaxPool2dBackwardAccumulatesSharedMaxima) {
  for (const WindowCase& c : WindowCases()) {
    for (DType dtype : {DType::kF32, DType::kF64}) {
      const Window2dGeometry& w = c.window;
      const int64_t out_h = WindowOut(w, 0, c.height);
      const int64_t out_w = WindowOut(w, 1, c.width);
      // argmax from integer-valued inputs (ties: many windows share a
      // maximum) with NaNs and, in "all-padding", -1 entries.
      const TensorBase argmax =
          TensorBase::Empty({2, 3, out_h, out_w}, DType::kI64, kCpu);
      GetBackend(kCpu).MaxPool2d(
          TensorBase::Empty({2, 3, out_h, out_w}, dtype, kCpu), argmax,
          WindowInput(c, dtype, 66, kCpu, true), w, PoolActivation::kNone);
      // Arbitrary gradients: the GPU sums each cell's windows in the CPU's
      // order, so the result must equal the CPU's bits, rounding included.
      std::vector<double> gradients(2 * 3 * out_h * out_w);
      std::mt19937 rng(67);
      std::uniform_real_distribution<double> uniform(-2.0, 2.0);
      for (double& value : gradients) value = uniform(rng);
      auto [cpu, gpu] = Both([&](const Device& device) {
        const TensorBase grad =
            TensorBase::FromHost(gradients.data(), {2, 3, out_w, out_h},
                                 DType::kF64, kCpu)
                .To(dtype)
                .ToDevice(device)
                .Transpose(2, 3);
        const TensorBase input_grad =
            TensorBase::Empty({2, 3, c.height, c.width}, dtype, device);
        GetBackend(device).MaxPool2dBackward(input_grad, grad,
                                             argmax.ToDevice(device), w);
        return input_grad;
      });
      ExpectBitEqual(cpu, gpu,
                     "max_pool2d backward " + c.name + " " + Name(dtype));
    }
  }
}

TEST_F(CudaBackendTest, WindowKernelsOnEmptyAndZeroAreaInputs) {
  // An input with H = W = 0: every window position covers padding only.
  const Window2dGeometry w = {{1, 1}, {1, 1}, {1, 1}, {1, 1}};  // OH = OW = 2
  for (DType dtype : {DType::kF32, DType::kF64}) {
    auto [cpu, gpu] = Both([&](const Device& device) {
      const TensorBase input = TensorBase::Empty({1, 2, 0, 0}, dtype, device);
      const TensorBase columns =
          TensorBase::Empty({1, 2, 1, 2, 2}, dtype, device);
      GetBackend(device).Im2Col(columns, input, w, 4.0);
      return columns;
    });
    ExpectBitEqual(cpu, gpu, "im2col zero-area " + Name(dtype));
    const TensorBase input = TensorBase::Empty({1, 2, 0, 0}, dtype, kGpu);
    const TensorBase out = TensorBase::Empty({1, 2, 2, 2}, dtype, kGpu);
    const TensorBase argmax =
        TensorBase::Empty({1, 2, 2, 2}, DType::kI64, kGpu);
    GetBackend(kGpu).MaxPool2d(out, argmax, input, w, PoolActivation::kNone);
    EXPECT_EQ(std::vector<double>(8, -std::numeric_limits<double>::infinity()),
              Doubles(out));
    EXPECT_EQ(std::vector<double>(8, -1.0), Doubles(argmax));
    const TensorBase grad = Input({1, 2, 2, 2}, dtype, 68, kGpu);
    GetBackend(kGpu).MaxPool2dBackward(input, grad, argmax, w);
    GetBackend(kGpu).Col2Im(input, Input({1, 2, 1, 2, 2}, dtype, 69, kGpu), w);
    // N = 0: nothing to do, nothing launched.
    const TensorBase none = TensorBase::Empty({0, 2, 3, 3}, dtype, kGpu);
    const TensorBase none_columns =
        TensorBase::Empty({0, 2, 1, 5, 5}, dtype, kGpu);
    const TensorBase none_out = TensorBase::Empty({0, 2, 5, 5}, dtype, kGpu);
    const TensorBase none_argmax =
        TensorBase::Empty({0, 2, 5, 5}, DType::kI64, kGpu);
    GetBackend(kGpu).Im2Col(none_columns, none, w, 0.0);
    GetBackend(kGpu).Col2Im(none, none_columns, w);
    GetBackend(kGpu).MaxPool2d(none_out, none_argmax, none, w,
                               PoolActivation::kNone);
    GetBackend(kGpu).MaxPool2dBackward(none, none_out, none_argmax, w);
    EXPECT_TRUE(cuda::SynchronizeCudaDevice(0).ok());
  }
}

}  // namespace
}  // namespace kindling::cuda_test
