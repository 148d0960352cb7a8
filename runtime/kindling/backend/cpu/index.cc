// Index kernels on the CPU: index_select (embedding lookup), gather, and
// scatter_add (the gradient of both).
//
// All view the tensor as [outer, size, inner] around `axis` (contiguous).
// index_select and gather move whole elements by their byte size, so one
// implementation serves every dtype; index_select copies `inner`-element rows
// with memcpy. scatter_add adds, so it is typed (f32, f64).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"
#include "kindling/tensor/dtype_dispatch.h"

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

// FirstOutOfRange() is the position of the first entry outside [0, bound),
// or -1.
template <class I>
int64_t FirstOutOfRange(const I* entries, int64_t count, int64_t bound) {
  // Branch-free scan: the common case is that every entry is valid.
  constexpr int64_t kBlock = 1024;
  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t end = std::min(count, start + kBlock);
    bool bad = false;
    for (int64_t i = start; i < end; ++i) {
      bad |= static_cast<int64_t>(entries[i]) < 0 ||
             static_cast<int64_t>(entries[i]) >= bound;
    }
    if (!bad) continue;
    for (int64_t i = start; i < end; ++i) {
      if (entries[i] < 0 || entries[i] >= bound) return i;
    }
  }
  return -1;
}

void Outer(const Shape& shape, int axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < axis; ++i) *outer *= shape[i];
  for (int i = axis + 1; i < shape.rank(); ++i) *inner *= shape[i];
}

}  // namespace

void CheckIndicesKernel(const TensorBase& index, int64_t bound,
                        const char* op) {
  const TensorBase packed = index.Contiguous();
  int64_t position = -1, value = 0;
  if (packed.dtype() == DType::kI64) {
    const int64_t* entries = packed.data_as<const int64_t>();
    position = FirstOutOfRange(entries, packed.numel(), bound);
    if (position >= 0) value = entries[position];
  } else {
    KINDLING_CHECK(packed.dtype() == DType::kI32,
                   "%s: index dtype %s (i64 or i32 expected)", op,
                   std::string(DTypeName(packed.dtype())));
    const int32_t* entries = packed.data_as<const int32_t>();
    position = FirstOutOfRange(entries, packed.numel(), bound);
    if (position >= 0) value = entries[position];
  }
  KINDLING_CHECK(position < 0,
                 "%s: index %d out of range [0, %d) (entry %d of index %s)", op,
                 value, bound, position, index.shape().ToString());
}

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

namespace {

// Shapes: out [outer, size, inner]; src [outer, picks, inner]; index_of(row,
// j, i) the index of src's element (o, j, i), row = (o * picks + j) * inner.
// Threads split the (outer, inner) columns: two columns never write the same
// output element, so the adds need no atomics and the result does not depend
// on the thread count.
template <class T, class IndexOf>
void ScatterAddTyped(T* out, const T* src, const IndexOf& index_of,
                     int64_t outer, int64_t size, int64_t picks,
                     int64_t inner) {
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / std::max<int64_t>(picks, 1));
  ParallelFor(outer * inner, grain, [&](int64_t begin, int64_t end) {
    for (int64_t column = begin; column < end;) {
      const int64_t o = column / inner;
      const int64_t first = column % inner;
      const int64_t last = std::min(inner, first + (end - column));
      for (int64_t j = 0; j < picks; ++j) {
        const int64_t row = (o * picks + j) * inner;
        for (int64_t i = first; i < last; ++i) {
          out[(o * size + index_of(row, j, i)) * inner + i] += src[row + i];
        }
      }
      column += last - first;
    }
  });
}

// PicksOfBroadcast() is the entries along `axis` of an index that is one
// index per pick broadcast over the other axes (index_select's gradient
// expands its 1-D index so), or nullopt for any other index. Read so, the
// index costs `picks` reads rather than a copy of src's size.
std::optional<std::vector<int64_t>> PicksOfBroadcast(const TensorBase& index,
                                                     int axis) {
  for (int d = 0; d < index.rank(); ++d) {
    if (d != axis && index.shape()[d] > 1 && index.strides()[d] != 0) {
      return std::nullopt;
    }
  }
  const int64_t picks = index.shape()[axis], stride = index.strides()[axis];
  std::vector<int64_t> values(picks);
  for (int64_t j = 0; j < picks; ++j) {
    values[j] = index.dtype() == DType::kI64
                    ? index.data_as<const int64_t>()[j * stride]
                    : index.data_as<const int32_t>()[j * stride];
  }
  return values;
}

}  // namespace

void ScatterAddKernel(const TensorBase& out, int axis, const TensorBase& index,
                      const TensorBase& src) {
  const TensorBase source = src.Contiguous();
  int64_t outer = 0, inner = 0;
  Outer(source.shape(), axis, &outer, &inner);
  const int64_t size = out.shape()[axis];
  const int64_t picks = source.shape()[axis];
  DispatchDType<kF32F64>(out.dtype(), "cpu scatter_add", [&]<class T>() {
    T* target = out.data_as<T>();
    const T* from = source.data_as<const T>();
    if (const auto by_pick = PicksOfBroadcast(index, axis)) {
      const int64_t* pick = by_pick->data();
      ScatterAddTyped(
          target, from, [pick](int64_t, int64_t j, int64_t) { return pick[j]; },
          outer, size, picks, inner);
      return;
    }
    const std::vector<int64_t> indices = ReadIndices(index);
    const int64_t* entry = indices.data();
    ScatterAddTyped(
        target, from,
        [entry](int64_t row, int64_t, int64_t i) { return entry[row + i]; },
        outer, size, picks, inner);
  });
}

}  // namespace kindling::cpu
