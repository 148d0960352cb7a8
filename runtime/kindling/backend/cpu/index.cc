// Index kernels on the CPU: index_select (embedding lookup) and gather.
//
// Both view the input as [outer, size, inner] around `axis` (contiguous) and
// move whole elements by their byte size, so one implementation serves every
// dtype. index_select copies `inner`-element rows with memcpy.
#include <cstdint>
#include <cstring>
#include <vector>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"

namespace kindling::cpu {
namespace {

// ReadIndices() returns the entries of an i64 or i32 tensor in row-major order.
std::vector<int64_t> ReadIndices(const TensorBase& index) {
  const TensorBase packed = index.Contiguous();
  std::vector<int64_t> values(packed.numel());
  if (packed.dtype() == DType::kI64) {
    std::memcpy(values.data(), packed.data(), values.size() * sizeof(int64_t));
  } else {
    const int32_t* source = packed.data_as<const int32_t>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = source[i];
  }
  return values;
}

void Outer(const Shape& shape, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; ++i) *outer *= shape[i];
  for (int i = axis + 1; i < shape.rank(); ++i) *inner *= shape[i];
}

}  // namespace

void IndexSelectKernel(const TensorBase& out, const TensorBase& in, int axis,
                       const TensorBase& index) {
  const TensorBase input = in.Contiguous();
  const std::vector<int64_t> indices = ReadIndices(index);
  int64_t outer = 0, inner = 0;
  Outer(input.shape(), axis, &outer, &inner);
  const int64_t size = input.shape()[axis];
  const int64_t count = static_cast<int64_t>(indices.size());
  const size_t row_bytes = inner * input.element_size();
  const char* source = static_cast<const char*>(input.data());
  char* target = static_cast<char*>(out.data());
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(inner, 1));
  ParallelFor(outer * count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row / count;
      const int64_t j = row % count;
      std::memcpy(target + row * row_bytes,
                  source + (o * size + indices[j]) * row_bytes, row_bytes);
    }
  });
}

void GatherKernel(const TensorBase& out, const TensorBase& in, int axis,
                  const TensorBase& index) {
  const TensorBase input = in.Contiguous();
  const std::vector<int64_t> indices = ReadIndices(index);
  int64_t outer = 0, inner = 0;
  Outer(out.shape(), axis, &outer, &inner);
  const int64_t size = input.shape()[axis];
  const int64_t picks = out.shape()[axis];
  const size_t element = input.element_size();
  const char* source = static_cast<const char*>(input.data());
  char* target = static_cast<char*>(out.data());
  ParallelFor(outer * picks * inner, kElementGrain,
              [&](int64_t begin, int64_t end) {
                for (int64_t flat = begin; flat < end; ++flat) {
                  const int64_t i = flat % inner;
                  const int64_t o = flat / (picks * inner);
                  const int64_t from = (o * size + indices[flat]) * inner + i;
                  std::memcpy(target + flat * element, source + from * element,
                              element);
                }
              });
}

}  // namespace kindling::cpu
