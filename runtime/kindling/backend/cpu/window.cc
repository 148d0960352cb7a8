// Sliding-window kernels on the CPU: im2col and its adjoint col2im (for
// Conv2d and the generic patches), and max pooling with argmax and its
// scatter backward.
//
// Shapes (backend.h, Window2dGeometry): input [N, C, H, W], kernel K = KH*KW
// entries, window positions [OH, OW]. Every kernel parallelizes over the
// N * C planes: each plane is read and written by one thread, so col2im and
// the pool's scatter accumulate without atomics. Inside a plane the loops
// run along output rows (ow innermost), where the caller's layouts are
// unit-stride; the valid (non-padding) span of each row is computed once so
// the inner loop has no bounds checks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/max_pool_2x2.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/backend/cpu/window_plane.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/element_math.h"

namespace kindling::cpu {
namespace {

// PlaneGrain() is how many (n, c) planes are worth one more thread when each
// costs `work_per_plane` element steps.
int64_t PlaneGrain(int64_t work_per_plane) {
  return std::max<int64_t>(
      1, kElementGrain / std::max<int64_t>(work_per_plane, 1));
}

template <class T>
void Im2ColTyped(const TensorBase& columns, const TensorBase& input,
                 const Window2dGeometry& window, double pad_value) {
  const Shape& in_shape = input.shape();
  const int64_t channels = in_shape[1];
  const PlaneGeometry plane{in_shape[2], in_shape[3], columns.shape()[3],
                            columns.shape()[4]};
  const int64_t area = window.kernel[0] * window.kernel[1];
  const Shape& is = input.strides();
  const Shape& cs = columns.strides();
  const T* in = input.data_as<const T>();
  T* col = columns.data_as<T>();
  ParallelFor(
      in_shape[0] * channels, PlaneGrain(area * plane.out_h * plane.out_w),
      [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          const int64_t n = p / channels, c = p % channels;
          Im2ColPlane(in + n * is[0] + c * is[1], is[2], is[3], plane, window,
                      static_cast<T>(pad_value), col + n * cs[0] + c * cs[1],
                      ColumnStrides{cs[2], cs[3], cs[4]});
        }
      });
}

template <class T>
void Col2ImTyped(const TensorBase& input_grad, const TensorBase& columns,
                 const Window2dGeometry& window) {
  const Shape& in_shape = input_grad.shape();
  const int64_t channels = in_shape[1];
  const PlaneGeometry plane{in_shape[2], in_shape[3], columns.shape()[3],
                            columns.shape()[4]};
  const int64_t area = window.kernel[0] * window.kernel[1];
  const Shape& cs = columns.strides();
  const T* col = columns.data_as<const T>();
  T* out = input_grad.data_as<T>();
  ParallelFor(in_shape[0] * channels,
              PlaneGrain(area * plane.out_h * plane.out_w),
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const int64_t n = p / channels, c = p % channels;
                  Col2ImPlane(col + n * cs[0] + c * cs[1],
                              ColumnStrides{cs[2], cs[3], cs[4]}, plane, window,
                              out + p * plane.height * plane.width);
                }
              });
}

// StorePooled() writes a window's maximum and argmax, through the ReLU of
// PoolActivation::kRelu when `relu` (backend.h).
template <class T>
void StorePooled(T best, int64_t best_cell, bool relu, T* out,
                 int64_t* argmax) {
  if (relu) {
    if (best <= T(0)) best_cell = -1;
    best = element_math::Relu(best);
  }
  *out = best;
  if (argmax != nullptr) *argmax = best_cell;
}

// InteriorWindowMax() is MaxPool2d's window for a position whose cells all
// lie inside the input (most of them): no bounds checks, and the running
// maximum is updated with selects rather than branches, which mispredict on
// real activations. Same rule as the general loop: a larger value or the
// first NaN replaces the best, so ties keep the first cell in kernel order.
template <class T>
void InteriorWindowMax(const T* source, const Shape& is, int64_t top,
                       int64_t left, int64_t width,
                       const Window2dGeometry& window, bool relu, T* out,
                       int64_t* argmax) {
  T best = source[top * is[2] + left * is[3]];
  int64_t best_cell = top * width + left;
  for (int64_t i = 0; i < window.kernel[0]; ++i) {
    const int64_t ih = top + i * window.dilation[0];
    const T* row = source + ih * is[2];
    for (int64_t j = 0; j < window.kernel[1]; ++j) {
      const int64_t iw = left + j * window.dilation[1];
      const T value = row[iw * is[3]];
      const bool take = value > best || (value != value && best == best);
      best = take ? value : best;
      best_cell = take ? ih * width + iw : best_cell;
    }
  }
  StorePooled(best, best_cell, relu, out, argmax);
}

template <class T>
void MaxPool2dTyped(const TensorBase& out, const TensorBase& argmax,
                    const TensorBase& input, const Window2dGeometry& window,
                    PoolActivation activation) {
  const bool relu = activation == PoolActivation::kRelu;
  const Shape& in_shape = input.shape();
  const int64_t channels = in_shape[1], height = in_shape[2];
  const int64_t width = in_shape[3];
  const int64_t out_h = out.shape()[2], out_w = out.shape()[3];
  const Shape& is = input.strides();
  const T* in = input.data_as<const T>();
  T* result = out.data_as<T>();
  int64_t* indices = argmax.defined() ? argmax.data_as<int64_t>() : nullptr;
  const int64_t area = window.kernel[0] * window.kernel[1];
  if constexpr (std::is_same_v<T, float>) {
    if (FitsMaxPool2x2(input, window)) {
      ParallelFor(in_shape[0] * channels, PlaneGrain(out_h * out_w),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t plane = begin; plane < end; ++plane) {
                      const int64_t n = plane / channels, c = plane % channels;
                      const float* source = in + n * is[0] + c * is[1];
                      for (int64_t oh = 0; oh < out_h; ++oh) {
                        const int64_t at = (plane * out_h + oh) * out_w;
                        MaxPool2x2Row(
                            source + 2 * oh * is[2],
                            source + (2 * oh + 1) * is[2], out_w,
                            2 * oh * width, width, relu, result + at,
                            indices != nullptr ? indices + at : nullptr);
                      }
                    }
                  });
      return;
    }
  }
  ParallelFor(
      in_shape[0] * channels, PlaneGrain(area * out_h * out_w),
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const int64_t n = plane / channels, c = plane % channels;
          const T* source = in + n * is[0] + c * is[1];
          for (int64_t oh = 0; oh < out_h; ++oh) {
            const int64_t top = oh * window.stride[0] - window.padding[0];
            const bool rows_inside =
                top >= 0 &&
                top + (window.kernel[0] - 1) * window.dilation[0] < height;
            for (int64_t ow = 0; ow < out_w; ++ow) {
              const int64_t left = ow * window.stride[1] - window.padding[1];
              const int64_t at = (plane * out_h + oh) * out_w + ow;
              if (rows_inside && left >= 0 &&
                  left + (window.kernel[1] - 1) * window.dilation[1] < width) {
                InteriorWindowMax(source, is, top, left, width, window, relu,
                                  &result[at],
                                  indices != nullptr ? &indices[at] : nullptr);
                continue;
              }
              T best = T(0);
              int64_t best_cell = -1;
              for (int64_t i = 0; i < window.kernel[0]; ++i) {
                const int64_t ih = top + i * window.dilation[0];
                if (ih < 0 || ih >= height) continue;
                for (int64_t j = 0; j < window.kernel[1]; ++j) {
                  const int64_t iw = left + j * window.dilation[1];
                  if (iw < 0 || iw >= width) continue;
                  const T value = source[ih * is[2] + iw * is[3]];
                  // NaN wins and then stays (PyTorch's rule).
                  if (best_cell < 0 || value > best ||
                      (std::isnan(value) && !std::isnan(best))) {
                    best = value;
                    best_cell = ih * width + iw;
                  }
                }
              }
              if (best_cell < 0) best = -std::numeric_limits<T>::infinity();
              StorePooled(best, best_cell, relu, &result[at],
                          indices != nullptr ? &indices[at] : nullptr);
            }
          }
        }
      });
}

// MaxPool2x2Backward() is MaxPool2dBackward for FitsMaxPool2x2Backward():
// each output row's two input rows written by MaxPool2x2BackwardRow, then
// the column and row that no window covers (odd sizes) zeroed.
void MaxPool2x2Backward(const TensorBase& input_grad, const TensorBase& grad,
                        const TensorBase& argmax) {
  const Shape& in_shape = input_grad.shape();
  const int64_t channels = in_shape[1];
  const int64_t height = in_shape[2], width = in_shape[3];
  const int64_t out_h = grad.shape()[2], out_w = grad.shape()[3];
  const Shape& gs = grad.strides();
  const float* g = grad.data_as<const float>();
  const int64_t* indices = argmax.data_as<const int64_t>();
  float* out = input_grad.data_as<float>();
  ParallelFor(
      in_shape[0] * channels, PlaneGrain(height * width + out_h * out_w),
      [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane) {
          const int64_t n = plane / channels, c = plane % channels;
          float* target = out + plane * height * width;
          for (int64_t oh = 0; oh < out_h; ++oh) {
            float* top = target + 2 * oh * width;
            MaxPool2x2BackwardRow(g + n * gs[0] + c * gs[1] + oh * gs[2],
                                  indices + (plane * out_h + oh) * out_w, out_w,
                                  2 * oh * width, width, top, top + width);
            std::fill(top + 2 * out_w, top + width, 0.0f);
            std::fill(top + width + 2 * out_w, top + 2 * width, 0.0f);
          }
          std::fill(target + 2 * out_h * width, target + height * width, 0.0f);
        }
      });
}

// WindowsDisjoint() is whether no two windows share an input cell (stride
// at least the dilated kernel's extent on both axes), so that each cell
// takes at most one window's gradient.
bool WindowsDisjoint(const Window2dGeometry& window) {
  for (int axis = 0; axis < 2; ++axis) {
    if (window.stride[axis] < window.Span(axis)) return false;
  }
  return true;
}

// UnpoolDisjoint() stores each window's gradient at its argmax cell of a
// zeroed plane, for windows that share no cell: plain stores where the
// general loop reads, adds and writes back each cell in turn (the example
// CNN's second pool, rows of 7 windows, took that loop). A window with no
// argmax (-1) stores into a scratch cell, without a branch that a fused
// ReLU's half of -1 entries would mispredict.
template <class T>
void UnpoolDisjoint(const T* source, const Shape& gs, const int64_t* index,
                    int64_t out_h, int64_t out_w, T* target) {
  T scratch;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    for (int64_t ow = 0; ow < out_w; ++ow) {
      const int64_t cell = index[oh * out_w + ow];
      T* to = cell >= 0 ? target + cell : &scratch;
      // + 0 as the general loop's 0 + g: a -0 gradient lands as +0.
      *to = source[oh * gs[2] + ow * gs[3]] + T(0);
    }
  }
}

template <class T>
void MaxPool2dBackwardTyped(const TensorBase& input_grad,
                            const TensorBase& grad, const TensorBase& argmax,
                            const Window2dGeometry& window) {
  if constexpr (std::is_same_v<T, float>) {
    if (FitsMaxPool2x2Backward(input_grad, grad, window)) {
      MaxPool2x2Backward(input_grad, grad, argmax);
      return;
    }
  }
  const Shape& in_shape = input_grad.shape();
  const int64_t channels = in_shape[1];
  const int64_t plane_size = in_shape[2] * in_shape[3];
  const int64_t out_h = grad.shape()[2], out_w = grad.shape()[3];
  const Shape& gs = grad.strides();
  const T* g = grad.data_as<const T>();
  const int64_t* indices = argmax.data_as<const int64_t>();
  T* out = input_grad.data_as<T>();
  const bool disjoint = WindowsDisjoint(window);
  ParallelFor(in_shape[0] * channels, PlaneGrain(plane_size + out_h * out_w),
              [&](int64_t begin, int64_t end) {
                for (int64_t plane = begin; plane < end; ++plane) {
                  const int64_t n = plane / channels, c = plane % channels;
                  T* target = out + plane * plane_size;
                  std::fill(target, target + plane_size, T(0));
                  const T* source = g + n * gs[0] + c * gs[1];
                  const int64_t* index = indices + plane * out_h * out_w;
                  if (disjoint) {
                    UnpoolDisjoint(source, gs, index, out_h, out_w, target);
                    continue;
                  }
                  for (int64_t oh = 0; oh < out_h; ++oh) {
                    for (int64_t ow = 0; ow < out_w; ++ow) {
                      // Branch-free: an argmax of -1 adds 0 to cell 0 (no
                      // change: the sum began at +0). After a fused ReLU about
                      // half the entries are -1, and a branch on them
                      // mispredicts.
                      const int64_t cell = index[oh * out_w + ow];
                      const bool routed = cell >= 0;
                      target[routed ? cell : 0] +=
                          routed ? source[oh * gs[2] + ow * gs[3]] : T(0);
                    }
                  }
                }
              });
}

}  // namespace

void Im2ColKernel(const TensorBase& columns, const TensorBase& input,
                  const Window2dGeometry& window, double pad_value) {
  DispatchDType<kF32F64>(input.dtype(), "cpu im2col", [&]<class T>() {
    Im2ColTyped<T>(columns, input, window, pad_value);
  });
}

void Col2ImKernel(const TensorBase& input_grad, const TensorBase& columns,
                  const Window2dGeometry& window) {
  DispatchDType<kF32F64>(input_grad.dtype(), "cpu col2im", [&]<class T>() {
    Col2ImTyped<T>(input_grad, columns, window);
  });
}

void MaxPool2dKernel(const TensorBase& out, const TensorBase& argmax,
                     const TensorBase& input, const Window2dGeometry& window,
                     PoolActivation activation) {
  DispatchDType<kF32F64>(input.dtype(), "cpu max_pool2d", [&]<class T>() {
    MaxPool2dTyped<T>(out, argmax, input, window, activation);
  });
}

void MaxPool2dBackwardKernel(const TensorBase& input_grad,
                             const TensorBase& grad, const TensorBase& argmax,
                             const Window2dGeometry& window) {
  DispatchDType<kF32F64>(
      input_grad.dtype(), "cpu max_pool2d backward", [&]<class T>() {
        MaxPool2dBackwardTyped<T>(input_grad, grad, argmax, window);
      });
}

}  // namespace kindling::cpu
