#include "kindling/tensor/shape.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_join.h"
#include "kindling/core/check.h"

namespace kindling {

int64_t Shape::num_elements() const {
  // Any zero dimension makes the tensor empty; checking first keeps the
  // product below from overflowing on shapes like [2^62, 4, 0].
  if (std::find(dims_.begin(), dims_.end(), 0) != dims_.end()) return 0;
  int64_t count = 1;
  for (int64_t dim : dims_) {
    KINDLING_CHECK(!__builtin_mul_overflow(count, dim, &count),
                   "shape %s has more elements than fit in 64 bits",
                   ToString());
  }
  return count;
}

std::string Shape::ToString() const {
  return "[" + absl::StrJoin(dims_, ", ") + "]";
}

Shape ContiguousStrides(const Shape& shape) {
  Shape strides = shape;
  int64_t stride = 1;
  for (int axis = shape.rank() - 1; axis >= 0; --axis) {
    strides[axis] = stride;
    KINDLING_CHECK(!__builtin_mul_overflow(
                       stride, std::max<int64_t>(shape[axis], 1), &stride),
                   "shape %s has more elements than fit in 64 bits",
                   shape.ToString());
  }
  return strides;
}

bool BroadcastShapes(const Shape& a, const Shape& b, Shape* result) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int axis = 0; axis < rank; ++axis) {
    const int a_axis = axis - (rank - a.rank());
    const int b_axis = axis - (rank - b.rank());
    const int64_t a_dim = a_axis >= 0 ? a[a_axis] : 1;
    const int64_t b_dim = b_axis >= 0 ? b[b_axis] : 1;
    if (a_dim != b_dim && a_dim != 1 && b_dim != 1) return false;
    out.push_back(a_dim == 1 ? b_dim : a_dim);
  }
  *result = std::move(out);
  return true;
}

}  // namespace kindling
