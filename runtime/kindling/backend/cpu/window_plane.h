// Im2ColPlane and Col2ImPlane: im2col and its adjoint for one (n, c) plane,
// the inner loops of the Im2Col / Col2Im kernels (window.cc) and of the
// per-sample Conv2d (conv2d.cc).
//
// A plane's columns are K = KH * KW rows of OH * OW window positions; entry
// (k, oh, ow) sits at columns[k * strides.k + oh * strides.oh +
// ow * strides.ow]. The valid (non-padding) span of each row is computed once,
// so the inner loops have no bounds checks, and a unit-stride row is one copy.
#ifndef KINDLING_BACKEND_CPU_WINDOW_PLANE_H_
#define KINDLING_BACKEND_CPU_WINDOW_PLANE_H_

#include <algorithm>
#include <cstdint>

#include "kindling/tensor/backend.h"

namespace kindling::cpu {

// ColumnStrides: element strides of a plane's columns along (k, oh, ow).
struct ColumnStrides {
  int64_t k;
  int64_t oh;
  int64_t ow;
};

// PlaneGeometry: the plane's input extent and its window positions.
struct PlaneGeometry {
  int64_t height;
  int64_t width;
  int64_t out_h;
  int64_t out_w;
};

// RowSpan: along one output row, the window positions [begin, end) whose
// input column ow * stride + offset lies inside [0, width).
struct RowSpan {
  int64_t begin;
  int64_t end;
};

inline RowSpan ValidSpan(int64_t offset, int64_t stride, int64_t width,
                         int64_t out_w) {
  // Smallest ow with ow * stride + offset >= 0.
  int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // Smallest ow with ow * stride + offset >= width.
  int64_t end =
      width - offset <= 0 ? 0 : (width - offset + stride - 1) / stride;
  begin = std::min(begin, out_w);
  end = std::clamp(end, begin, out_w);
  return {begin, end};
}

// Im2ColPlane() writes every column entry of the plane at `source` (row
// stride row_stride, column stride col_stride): the input cell the entry
// reads, or `pad` where that cell is padding.
template <class T>
void Im2ColPlane(const T* source, int64_t row_stride, int64_t col_stride,
                 const PlaneGeometry& plane, const Window2dGeometry& window,
                 T pad, T* columns, const ColumnStrides& strides) {
  const int64_t kernel_w = window.kernel[1];
  const int64_t area = window.kernel[0] * kernel_w;
  const bool unit = strides.ow == 1 && col_stride == 1 && window.stride[1] == 1;
  for (int64_t k = 0; k < area; ++k) {
    const int64_t i = k / kernel_w, j = k % kernel_w;
    const int64_t left = j * window.dilation[1] - window.padding[1];
    const RowSpan span =
        ValidSpan(left, window.stride[1], plane.width, plane.out_w);
    T* target = columns + k * strides.k;
    for (int64_t oh = 0; oh < plane.out_h; ++oh) {
      T* dst = target + oh * strides.oh;
      const int64_t ih =
          oh * window.stride[0] - window.padding[0] + i * window.dilation[0];
      if (ih < 0 || ih >= plane.height) {
        for (int64_t ow = 0; ow < plane.out_w; ++ow) dst[ow * strides.ow] = pad;
        continue;
      }
      const T* row = source + ih * row_stride;
      for (int64_t ow = 0; ow < span.begin; ++ow) dst[ow * strides.ow] = pad;
      if (unit) {
        std::copy(row + span.begin + left, row + span.end + left,
                  dst + span.begin);
      } else {
        for (int64_t ow = span.begin; ow < span.end; ++ow) {
          dst[ow * strides.ow] =
              row[(ow * window.stride[1] + left) * col_stride];
        }
      }
      for (int64_t ow = span.end; ow < plane.out_w; ++ow) {
        dst[ow * strides.ow] = pad;
      }
    }
  }
}

// Col2ImPlane() overwrites the contiguous [height, width] plane `target`
// with the sum, for each cell, of the column entries Im2ColPlane() would
// have read from it (entries on padding are dropped).
template <class T>
void Col2ImPlane(const T* columns, const ColumnStrides& strides,
                 const PlaneGeometry& plane, const Window2dGeometry& window,
                 T* target) {
  const int64_t kernel_w = window.kernel[1];
  const int64_t area = window.kernel[0] * kernel_w;
  const bool unit = strides.ow == 1 && window.stride[1] == 1;
  std::fill(target, target + plane.height * plane.width, T(0));
  for (int64_t k = 0; k < area; ++k) {
    const int64_t i = k / kernel_w, j = k % kernel_w;
    const int64_t left = j * window.dilation[1] - window.padding[1];
    const RowSpan span =
        ValidSpan(left, window.stride[1], plane.width, plane.out_w);
    const T* source = columns + k * strides.k;
    for (int64_t oh = 0; oh < plane.out_h; ++oh) {
      const int64_t ih =
          oh * window.stride[0] - window.padding[0] + i * window.dilation[0];
      if (ih < 0 || ih >= plane.height) continue;
      const T* src = source + oh * strides.oh;
      T* row = target + ih * plane.width + left;
      if (unit) {
        for (int64_t ow = span.begin; ow < span.end; ++ow) row[ow] += src[ow];
      } else {
        for (int64_t ow = span.begin; ow < span.end; ++ow) {
          row[ow * window.stride[1]] += src[ow * strides.ow];
        }
      }
    }
  }
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_WINDOW_PLANE_H_
