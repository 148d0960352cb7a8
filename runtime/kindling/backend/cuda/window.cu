// Sliding-window kernels on CUDA: im2col and its adjoint col2im (Conv2d and
// the generic patches), max pooling with argmax, and its backward.
//
// Contracts in kindling/tensor/backend.h (Window2dGeometry, Im2Col ..
// MaxPool2dBackward). Each kernel is one grid-stride launch with a thread
// per element of the tensor it writes, so every output element has exactly
// one writer:
//   - Im2Col: a thread per columns[n, c, k, oh, ow] reads its input cell
//     (or writes pad_value).
//   - Col2Im: a thread per input cell gathers the column entries that read
//     it, visiting kernel entries in ascending k as the CPU's scatter does;
//     each k contributes at most once per cell, so the sum is in the CPU's
//     order: deterministic, no atomics, bit-identical to the CPU.
//   - MaxPool2d: a thread per window position scans its window in kernel
//     order with the CPU's comparisons (bit-identical values and argmax).
//   - MaxPool2dBackward: a thread per input cell gathers the gradients of
//     the windows covering it whose argmax it is, in the CPU's order:
//     deterministic, no atomics, bit-identical to the CPU.
// Every index is int64 (tensors above 2^31 elements), strides are the
// tensors' own (strided and transposed views need no copies), and
// zero-size tensors launch nothing.
#include <cstdint>
#include <limits>
#include <string>

#include "kindling/backend/cuda/cuda_check.h"
#include "kindling/backend/cuda/kernels.h"
#include "kindling/backend/cuda/launch.h"
#include "kindling/core/check.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cuda {
namespace {

// WindowShape: the geometry and sizes every window kernel needs, as plain
// int64 fields (passed to kernels by value; std::array has no __device__
// accessors without relaxed constexpr, and this keeps the names explicit).
struct WindowShape {
  int64_t channels, height, width;
  int64_t out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

WindowShape MakeWindowShape(const Shape& input, int64_t out_h, int64_t out_w,
                            const Window2dGeometry& window) {
  KINDLING_CHECK(input.rank() == 4, "cuda window kernel: input rank %d (4)",
                 input.rank());
  return {input[1],
          input[2],
          input[3],
          out_h,
          out_w,
          window.kernel[0],
          window.kernel[1],
          window.stride[0],
          window.stride[1],
          window.padding[0],
          window.padding[1],
          window.dilation[0],
          window.dilation[1]};
}

// Strides4 / Strides5: a tensor's element strides, by value for kernels.
struct Strides4 {
  int64_t s[4];
};
struct Strides5 {
  int64_t s[5];
};

Strides4 StridesOf4(const TensorBase& tensor) {
  KINDLING_CHECK(tensor.rank() == 4, "cuda window kernel: %s is not rank 4",
                 tensor.ToString());
  Strides4 result;
  for (int i = 0; i < 4; ++i) result.s[i] = tensor.strides()[i];
  return result;
}

Strides5 StridesOf5(const TensorBase& tensor) {
  KINDLING_CHECK(tensor.rank() == 5, "cuda window kernel: %s is not rank 5",
                 tensor.ToString());
  Strides5 result;
  for (int i = 0; i < 5; ++i) result.s[i] = tensor.strides()[i];
  return result;
}

void CheckContiguous(const TensorBase& tensor, const char* op,
                     const char* what) {
  KINDLING_CHECK(tensor.is_contiguous(), "cuda %s: %s %s is not contiguous", op,
                 what, tensor.ToString());
}

// --- Im2Col ----------------------------------------------------------------

template <class T>
struct Im2ColArgs {
  T* columns;
  const T* input;
  Strides5 column_strides;
  Strides4 input_strides;
  WindowShape w;
  T pad;
  int64_t count;  // N * C * K * OH * OW
};

// A thread per columns[n, c, k, oh, ow], in row-major order of that shape
// (ow fastest: neighbouring threads write neighbouring columns of the
// caller's [C * K, N * OH * OW] matrix and read neighbouring input cells).
template <class T>
__global__ void Im2ColGridKernel(Im2ColArgs<T> a) {
  const WindowShape& w = a.w;
  const int64_t area = w.kernel_h * w.kernel_w;
  for (int64_t i = GlobalThread(); i < a.count; i += GridThreads()) {
    int64_t rest = i;
    const int64_t ow = rest % w.out_w;
    rest /= w.out_w;
    const int64_t oh = rest % w.out_h;
    rest /= w.out_h;
    const int64_t k = rest % area;
    rest /= area;
    const int64_t c = rest % w.channels;
    const int64_t n = rest / w.channels;
    const int64_t ih =
        oh * w.stride_h - w.pad_h + (k / w.kernel_w) * w.dilation_h;
    const int64_t iw =
        ow * w.stride_w - w.pad_w + (k % w.kernel_w) * w.dilation_w;
    const int64_t* is = a.input_strides.s;
    const int64_t* cs = a.column_strides.s;
    const bool inside = ih >= 0 && ih < w.height && iw >= 0 && iw < w.width;
    a.columns[n * cs[0] + c * cs[1] + k * cs[2] + oh * cs[3] + ow * cs[4]] =
        inside ? a.input[n * is[0] + c * is[1] + ih * is[2] + iw * is[3]]
               : a.pad;
  }
}

template <class T>
void LaunchIm2Col(cudaStream_t stream, const TensorBase& columns,
                  const TensorBase& input, const Window2dGeometry& window,
                  double pad_value) {
  const int64_t count = columns.numel();
  if (count == 0) return;
  const Im2ColArgs<T> args{columns.data_as<T>(),
                           input.data_as<const T>(),
                           StridesOf5(columns),
                           StridesOf4(input),
                           MakeWindowShape(input.shape(), columns.shape()[3],
                                           columns.shape()[4], window),
                           static_cast<T>(pad_value),
                           count};
  const LaunchGrid grid = GridFor(count);
  Im2ColGridKernel<T>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(args);
  KINDLING_CUDA_CHECK_LAUNCH("Im2ColGridKernel");
}

// --- Col2Im ----------------------------------------------------------------

// CoveringPosition(): the window position (along one axis) whose kernel
// entry `e` reads input coordinate `x`, or -1 when none does.
__device__ inline int64_t CoveringPosition(int64_t x, int64_t e, int64_t pad,
                                           int64_t stride, int64_t dilation,
                                           int64_t out_size) {
  const int64_t offset = x + pad - e * dilation;  // position * stride
  if (offset < 0 || offset % stride != 0) return -1;
  const int64_t position = offset / stride;
  return position < out_size ? position : -1;
}

template <class T>
struct Col2ImArgs {
  T* input_grad;  // contiguous [N, C, H, W]
  const T* columns;
  Strides5 column_strides;
  WindowShape w;
  int64_t count;  // N * C * H * W
};

// A thread per input cell (n, c, h, w), summing in ascending kernel entry
// k = i * KW + j: the order in which the CPU's scatter adds into the cell.
template <class T>
__global__ void Col2ImGridKernel(Col2ImArgs<T> a) {
  const WindowShape& w = a.w;
  const int64_t* cs = a.column_strides.s;
  for (int64_t cell = GlobalThread(); cell < a.count; cell += GridThreads()) {
    const int64_t x = cell % w.width;
    const int64_t y = (cell / w.width) % w.height;
    const int64_t plane = cell / (w.width * w.height);
    const int64_t c = plane % w.channels, n = plane / w.channels;
    const T* source = a.columns + n * cs[0] + c * cs[1];
    T sum = T(0);
    for (int64_t i = 0; i < w.kernel_h; ++i) {
      const int64_t oh =
          CoveringPosition(y, i, w.pad_h, w.stride_h, w.dilation_h, w.out_h);
      if (oh < 0) continue;
      for (int64_t j = 0; j < w.kernel_w; ++j) {
        const int64_t ow =
            CoveringPosition(x, j, w.pad_w, w.stride_w, w.dilation_w, w.out_w);
        if (ow < 0) continue;
        sum += source[(i * w.kernel_w + j) * cs[2] + oh * cs[3] + ow * cs[4]];
      }
    }
    a.input_grad[cell] = sum;
  }
}

template <class T>
void LaunchCol2Im(cudaStream_t stream, const TensorBase& input_grad,
                  const TensorBase& columns, const Window2dGeometry& window) {
  const int64_t count = input_grad.numel();
  if (count == 0) return;
  CheckContiguous(input_grad, "col2im", "input_grad");
  const Col2ImArgs<T> args{
      input_grad.data_as<T>(), columns.data_as<const T>(), StridesOf5(columns),
      MakeWindowShape(input_grad.shape(), columns.shape()[3],
                      columns.shape()[4], window),
      count};
  const LaunchGrid grid = GridFor(count);
  Col2ImGridKernel<T>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(args);
  KINDLING_CUDA_CHECK_LAUNCH("Col2ImGridKernel");
}

// --- MaxPool2d -------------------------------------------------------------

template <class T>
struct MaxPoolArgs {
  T* out;           // contiguous [N, C, OH, OW]
  int64_t* argmax;  // contiguous [N, C, OH, OW], or null
  const T* input;
  Strides4 input_strides;
  WindowShape w;
  int64_t count;  // N * C * OH * OW
  bool relu;      // PoolActivation::kRelu
};

template <class T>
__device__ inline bool IsNan(T x) {
  return x != x;
}

// A thread per window position; the scan and comparisons are the CPU's, so
// the value and argmax match it exactly: a later cell replaces the best only
// when strictly larger, or when it is the first NaN (a NaN then stays).
template <class T>
__global__ void MaxPoolGridKernel(MaxPoolArgs<T> a) {
  const WindowShape& w = a.w;
  const int64_t* is = a.input_strides.s;
  for (int64_t at = GlobalThread(); at < a.count; at += GridThreads()) {
    const int64_t ow = at % w.out_w;
    const int64_t oh = (at / w.out_w) % w.out_h;
    const int64_t plane = at / (w.out_w * w.out_h);
    const int64_t c = plane % w.channels, n = plane / w.channels;
    const T* source = a.input + n * is[0] + c * is[1];
    const int64_t top = oh * w.stride_h - w.pad_h;
    const int64_t left = ow * w.stride_w - w.pad_w;
    T best = T(0);
    int64_t best_cell = -1;
    for (int64_t i = 0; i < w.kernel_h; ++i) {
      const int64_t ih = top + i * w.dilation_h;
      if (ih < 0 || ih >= w.height) continue;
      for (int64_t j = 0; j < w.kernel_w; ++j) {
        const int64_t iw = left + j * w.dilation_w;
        if (iw < 0 || iw >= w.width) continue;
        const T value = source[ih * is[2] + iw * is[3]];
        if (best_cell < 0 || value > best || (IsNan(value) && !IsNan(best))) {
          best = value;
          best_cell = ih * w.width + iw;
        }
      }
    }
    // A window over padding only: -inf and no argmax (backend.h).
    if (best_cell < 0) best = -std::numeric_limits<T>::infinity();
    if (a.relu) {
      // PoolActivation::kRelu: no gradient where the maximum is <= 0.
      if (best <= T(0)) best_cell = -1;
      best = element_math::Relu(best);
    }
    a.out[at] = best;
    if (a.argmax != nullptr) a.argmax[at] = best_cell;
  }
}

template <class T>
void LaunchMaxPool(cudaStream_t stream, const TensorBase& out,
                   const TensorBase& argmax, const TensorBase& input,
                   const Window2dGeometry& window, PoolActivation activation) {
  const int64_t count = out.numel();
  if (count == 0) return;
  CheckContiguous(out, "max_pool2d", "out");
  if (argmax.defined()) {
    CheckContiguous(argmax, "max_pool2d", "argmax");
    KINDLING_CHECK(
        argmax.dtype() == DType::kI64 && argmax.shape() == out.shape(),
        "cuda max_pool2d: argmax %s must be i64 of out's shape %s",
        argmax.ToString(), out.ToString());
  }
  const MaxPoolArgs<T> args{
      out.data_as<T>(),
      argmax.defined() ? argmax.data_as<int64_t>() : nullptr,
      input.data_as<const T>(),
      StridesOf4(input),
      MakeWindowShape(input.shape(), out.shape()[2], out.shape()[3], window),
      count,
      activation == PoolActivation::kRelu};
  const LaunchGrid grid = GridFor(count);
  MaxPoolGridKernel<T>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(args);
  KINDLING_CUDA_CHECK_LAUNCH("MaxPoolGridKernel");
}

// --- MaxPool2dBackward -----------------------------------------------------

template <class T>
struct MaxPoolBackwardArgs {
  T* input_grad;  // contiguous [N, C, H, W]
  const T* grad;
  const int64_t* argmax;  // contiguous [N, C, OH, OW]
  Strides4 grad_strides;
  WindowShape w;
  int64_t count;  // N * C * H * W
};

// A thread per input cell sums the gradients of the windows whose argmax it
// is. The windows covering cell (h, w) are those with oh * stride - pad +
// i * dilation == h for a kernel row i (likewise columns); walking i and j
// downwards visits them in ascending (oh, ow), the order in which the CPU's
// scatter adds them, so the sum is bit-identical to the CPU's and needs no
// atomics.
template <class T>
__global__ void MaxPoolBackwardGridKernel(MaxPoolBackwardArgs<T> a) {
  const WindowShape& w = a.w;
  const int64_t plane = w.height * w.width;
  const int64_t out_plane = w.out_h * w.out_w;
  const int64_t* gs = a.grad_strides.s;
  for (int64_t i = GlobalThread(); i < a.count; i += GridThreads()) {
    const int64_t cell = i % plane;
    const int64_t nc = i / plane;
    const int64_t n = nc / w.channels;
    const int64_t c = nc % w.channels;
    const int64_t h = cell / w.width;
    const int64_t x = cell % w.width;
    T sum = T(0);
    for (int64_t ki = w.kernel_h - 1; ki >= 0; --ki) {
      const int64_t oh =
          CoveringPosition(h, ki, w.pad_h, w.stride_h, w.dilation_h, w.out_h);
      if (oh < 0) continue;
      for (int64_t kj = w.kernel_w - 1; kj >= 0; --kj) {
        const int64_t ow =
            CoveringPosition(x, kj, w.pad_w, w.stride_w, w.dilation_w, w.out_w);
        if (ow < 0) continue;
        if (a.argmax[nc * out_plane + oh * w.out_w + ow] != cell) continue;
        sum += a.grad[n * gs[0] + c * gs[1] + oh * gs[2] + ow * gs[3]];
      }
    }
    a.input_grad[i] = sum;
  }
}

template <class T>
void LaunchMaxPoolBackward(cudaStream_t stream, const TensorBase& input_grad,
                           const TensorBase& grad, const TensorBase& argmax,
                           const Window2dGeometry& window) {
  KINDLING_CHECK(argmax.dtype() == DType::kI64 &&
                     argmax.shape() == grad.shape() && grad.rank() == 4 &&
                     input_grad.rank() == 4,
                 "cuda max_pool2d backward: argmax %s (i64), grad %s and "
                 "input_grad %s do not fit",
                 argmax.ToString(), grad.ToString(), input_grad.ToString());
  // No input cell (no planes, or empty ones): nothing to write.
  if (input_grad.numel() == 0) return;
  CheckContiguous(input_grad, "max_pool2d backward", "input_grad");
  if (grad.numel() == 0) {  // no window: every cell's gradient is 0
    KINDLING_CUDA_CHECK(cudaMemsetAsync(
        input_grad.data_as<T>(), 0, input_grad.numel() * sizeof(T), stream));
    return;
  }
  CheckContiguous(argmax, "max_pool2d backward", "argmax");
  MaxPoolBackwardArgs<T> args{
      input_grad.data_as<T>(),
      grad.data_as<const T>(),
      argmax.data_as<const int64_t>(),
      StridesOf4(grad),
      MakeWindowShape(input_grad.shape(), grad.shape()[2], grad.shape()[3],
                      window),
      input_grad.numel()};
  const LaunchGrid grid = GridFor(args.count);
  MaxPoolBackwardGridKernel<T>
      <<<static_cast<unsigned>(grid.blocks), grid.threads, 0, stream>>>(args);
  KINDLING_CUDA_CHECK_LAUNCH("MaxPoolBackwardGridKernel");
}

}  // namespace

void Im2ColKernel(cudaStream_t stream, const TensorBase& columns,
                  const TensorBase& input, const Window2dGeometry& window,
                  double pad_value) {
  DispatchDType<kF32F64>(input.dtype(), "cuda im2col", [&]<class T>() {
    LaunchIm2Col<T>(stream, columns, input, window, pad_value);
  });
}

void Col2ImKernel(cudaStream_t stream, const TensorBase& input_grad,
                  const TensorBase& columns, const Window2dGeometry& window) {
  DispatchDType<kF32F64>(input_grad.dtype(), "cuda col2im", [&]<class T>() {
    LaunchCol2Im<T>(stream, input_grad, columns, window);
  });
}

void MaxPool2dKernel(cudaStream_t stream, const TensorBase& out,
                     const TensorBase& argmax, const TensorBase& input,
                     const Window2dGeometry& window,
                     PoolActivation activation) {
  DispatchDType<kF32F64>(input.dtype(), "cuda max_pool2d", [&]<class T>() {
    LaunchMaxPool<T>(stream, out, argmax, input, window, activation);
  });
}

void MaxPool2dBackwardKernel(cudaStream_t stream, const TensorBase& input_grad,
                             const TensorBase& grad, const TensorBase& argmax,
                             const Window2dGeometry& window) {
  DispatchDType<kF32F64>(
      input_grad.dtype(), "cuda max_pool2d backward", [&]<class T>() {
        LaunchMaxPoolBackward<T>(stream, input_grad, grad, argmax, window);
      });
}

}  // namespace kindling::cuda
