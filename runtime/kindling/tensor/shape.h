// Shape: the extent of each dimension of a tensor.
//
// A Shape is a small value type (up to eight dimensions inline, no heap
// allocation) used both as a tensor's shape and as the lazy shape of a
// Param<Tensor<D>>. Rank 0 (`Shape{}`) is a scalar with one element.
//
//   kindling::Shape shape{2, 3, 4};
//   shape.rank();          // 3
//   shape[1];              // 3
//   shape.num_elements();  // 24
//   shape.ToString();      // "[2, 3, 4]"
#ifndef KINDLING_TENSOR_SHAPE_H_
#define KINDLING_TENSOR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>

#include "absl/container/inlined_vector.h"

namespace kindling {

class Shape {
 public:
  using Dims = absl::InlinedVector<int64_t, 8>;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::span<const int64_t> dims)
      : dims_(dims.begin(), dims.end()) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t& operator[](int axis) { return dims_[axis]; }
  std::span<const int64_t> dims() const { return {dims_.data(), dims_.size()}; }
  const int64_t* data() const { return dims_.data(); }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // num_elements() is the product of the dimensions (1 for rank 0).
  int64_t num_elements() const;

  // ToString() prints "[2, 3]"; a scalar prints "[]".
  std::string ToString() const;

  void push_back(int64_t dim) { dims_.push_back(dim); }
  void insert(int axis, int64_t dim) {
    dims_.insert(dims_.begin() + axis, dim);
  }
  void erase(int axis) { dims_.erase(dims_.begin() + axis); }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.dims_ == b.dims_;
  }
  friend std::ostream& operator<<(std::ostream& os, const Shape& shape) {
    return os << shape.ToString();
  }

 private:
  Dims dims_;
};

// ContiguousStrides() are the row-major element strides of `shape`.
Shape ContiguousStrides(const Shape& shape);

// BroadcastShapes() is the NumPy broadcast of two shapes (aligned at the
// right; size-1 dimensions stretch), or false when they are incompatible.
bool BroadcastShapes(const Shape& a, const Shape& b, Shape* result);

}  // namespace kindling

#endif  // KINDLING_TENSOR_SHAPE_H_
