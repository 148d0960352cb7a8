// Host-side dtype dispatch for the CUDA kernels. DispatchDType (every dtype)
// comes from kindling/tensor/dtype_dispatch.h; the narrower dispatchers here
// abort naming the op and dtype, as the CPU backend's do
// (backend/cpu/element.h).
#ifndef KINDLING_BACKEND_CUDA_DISPATCH_H_
#define KINDLING_BACKEND_CUDA_DISPATCH_H_

#include <cstdint>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/half.h"

namespace kindling::cuda {

// DispatchNumeric(): every dtype but bool (arithmetic kernels; the 16-bit
// floats compute in f32 and round on store).
template <class F>
void DispatchNumeric(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f.template operator()<float>();
    case DType::kF16:
      return f.template operator()<Half>();
    case DType::kBF16:
      return f.template operator()<BFloat16>();
    case DType::kF64:
      return f.template operator()<double>();
    case DType::kI64:
      return f.template operator()<int64_t>();
    case DType::kI32:
      return f.template operator()<int32_t>();
    case DType::kU8:
      return f.template operator()<uint8_t>();
    default:
      break;
  }
  KINDLING_CHECK(false, "cuda %s: dtype %s not supported", op,
                 std::string(DTypeName(dtype)));
}

// DispatchFloating(): f32, f64, f16, bf16 (kindling::DispatchFloating in
// dtype_dispatch.h, naming the CUDA backend on other dtypes).
template <class F>
void DispatchFloating(DType dtype, const char* op, F&& f) {
  kindling::DispatchFloating(dtype, "cuda", op, std::forward<F>(f));
}

// DispatchBySize(): an unsigned integer type as wide as one element, for
// kernels that move elements without looking at them.
template <class F>
void DispatchBySize(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      break;
  }
  KINDLING_CHECK(false, "cuda: element size %d",
                 static_cast<int>(element_size));
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_DISPATCH_H_
