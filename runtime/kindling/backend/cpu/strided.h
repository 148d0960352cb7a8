// StridedLayout and ForEachSegment: the loop skeleton of every element-wise
// CPU kernel.
//
// N operands of one shape (operand 0 is the output) are described by byte
// strides. MakeLayout() drops size-1 dimensions and merges dimensions that are
// contiguous in every operand, so a contiguous tensor of any rank becomes one
// long row and a transposed one two loops. ForEachSegment() then calls
//   segment(char* data[N], const int64_t stride[N], int64_t count)
// on runs along the innermost dimension; kernels write those as simple loops
// (specialized for unit and zero strides) that gcc vectorizes. Large work is
// split across threads by element ranges (parallel.h).
#ifndef KINDLING_BACKEND_CPU_STRIDED_H_
#define KINDLING_BACKEND_CPU_STRIDED_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

inline constexpr int kMaxLayoutRank = 16;

template <int N>
struct StridedLayout {
  int rank = 1;  // at least 1 after MakeLayout
  int64_t numel = 1;
  int64_t shape[kMaxLayoutRank];
  int64_t strides[N][kMaxLayoutRank];  // bytes
  char* data[N];
};

// MakeLayout() describes `operands` (all of operands[0]'s shape).
template <int N>
StridedLayout<N> MakeLayout(const std::array<const TensorBase*, N>& operands) {
  const Shape& shape = operands[0]->shape();
  KINDLING_CHECK(shape.rank() <= kMaxLayoutRank, "cpu: rank %d above %d",
                 shape.rank(), kMaxLayoutRank);
  StridedLayout<N> layout;
  layout.numel = shape.num_elements();
  for (int k = 0; k < N; ++k) {
    layout.data[k] = static_cast<char*>(operands[k]->data());
  }
  int rank = 0;
  for (int axis = 0; axis < shape.rank(); ++axis) {
    if (shape[axis] == 1) continue;
    // Merge into the previous kept dim when contiguous for every operand.
    bool merge = rank > 0;
    for (int k = 0; merge && k < N; ++k) {
      const int64_t stride =
          operands[k]->strides()[axis] * operands[k]->element_size();
      merge = layout.strides[k][rank - 1] == stride * shape[axis];
    }
    if (merge) {
      layout.shape[rank - 1] *= shape[axis];
      for (int k = 0; k < N; ++k) {
        layout.strides[k][rank - 1] =
            operands[k]->strides()[axis] * operands[k]->element_size();
      }
      continue;
    }
    layout.shape[rank] = shape[axis];
    for (int k = 0; k < N; ++k) {
      layout.strides[k][rank] =
          operands[k]->strides()[axis] * operands[k]->element_size();
    }
    ++rank;
  }
  if (rank == 0) {
    layout.shape[0] = 1;
    for (int k = 0; k < N; ++k) layout.strides[k][0] = 0;
    rank = 1;
  }
  layout.rank = rank;
  return layout;
}

// ForEachSegment() runs `segment` over the layout, in parallel above `grain`
// elements.
template <int N, class Segment>
void ForEachSegment(const StridedLayout<N>& layout, int64_t grain,
                    const Segment& segment) {
  const int rank = layout.rank;
  const int last = rank - 1;
  const int64_t inner = layout.shape[last];
  int64_t inner_stride[N];
  for (int k = 0; k < N; ++k) inner_stride[k] = layout.strides[k][last];
  ParallelFor(layout.numel, grain, [&](int64_t begin, int64_t end) {
    int64_t index[kMaxLayoutRank];
    int64_t rest = begin;
    for (int axis = last; axis >= 0; --axis) {
      index[axis] = rest % layout.shape[axis];
      rest /= layout.shape[axis];
    }
    char* data[N];
    for (int k = 0; k < N; ++k) {
      data[k] = layout.data[k];
      for (int axis = 0; axis < rank; ++axis) {
        data[k] += index[axis] * layout.strides[k][axis];
      }
    }
    int64_t position = begin;
    while (position < end) {
      const int64_t count = std::min(inner - index[last], end - position);
      segment(data, inner_stride, count);
      position += count;
      index[last] += count;
      for (int k = 0; k < N; ++k) data[k] += count * inner_stride[k];
      if (index[last] < inner || position >= end) continue;
      // Carry into the outer dimensions.
      index[last] = 0;
      for (int k = 0; k < N; ++k) data[k] -= inner * inner_stride[k];
      for (int axis = last - 1; axis >= 0; --axis) {
        ++index[axis];
        for (int k = 0; k < N; ++k) data[k] += layout.strides[k][axis];
        if (index[axis] < layout.shape[axis]) break;
        index[axis] = 0;
        for (int k = 0; k < N; ++k) {
          data[k] -= layout.shape[axis] * layout.strides[k][axis];
        }
      }
    }
  });
}

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_STRIDED_H_
