// Dtype dispatch shared by the backends: call a templated lambda with the
// storage type of a run-time DType.
//
//   DispatchDType(t.dtype(), [&]<class T>() { Kernel<T>(...); });
//   DispatchFloating(t.dtype(), "cpu", "adam", [&]<class T>() { ... });
//   DispatchF32F64(t.dtype(), "cpu", "conv2d", [&]<class T>() { ... });
//
// The 16-bit floats dispatch to their storage types Half and BFloat16. Each
// backend keeps its own narrower dispatchers (the dtypes its kernels
// implement) on top of these.
#ifndef KINDLING_TENSOR_DTYPE_DISPATCH_H_
#define KINDLING_TENSOR_DTYPE_DISPATCH_H_

#include <cstdint>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/half.h"

namespace kindling {

// DispatchDType() calls f.template operator()<T>() for `dtype`'s storage type.
template <class F>
decltype(auto) DispatchDType(DType dtype, F&& f) {
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
    case DType::kBool:
      return f.template operator()<bool>();
  }
  KINDLING_CHECK(false, "unknown dtype %d", static_cast<int>(dtype));
  return f.template operator()<float>();
}

// DispatchFloating() is DispatchDType() for the four floating storage types
// (f32, f64, f16, bf16), for kernels that compute half precision themselves
// (random fills, optimizer updates); other dtypes abort naming the backend
// and `op`.
template <class F>
void DispatchFloating(DType dtype, const char* backend, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f.template operator()<float>();
    case DType::kF64:
      return f.template operator()<double>();
    case DType::kF16:
      return f.template operator()<Half>();
    case DType::kBF16:
      return f.template operator()<BFloat16>();
    default:
      break;
  }
  KINDLING_CHECK(false, "%s %s: dtype %s is not floating (f32, f64, f16, bf16)",
                 backend, op, std::string(DTypeName(dtype)));
}

// DispatchF32F64() is DispatchDType() for f32 and f64 only, for kernels the
// front end always hands a float compute dtype (the window kernels and the
// convolution); other dtypes abort naming the backend and `op`.
template <class F>
void DispatchF32F64(DType dtype, const char* backend, const char* op, F&& f) {
  if (dtype == DType::kF32) return f.template operator()<float>();
  if (dtype == DType::kF64) return f.template operator()<double>();
  KINDLING_CHECK(false, "%s %s: no kernel for dtype %s (f32 and f64 only)",
                 backend, op, std::string(DTypeName(dtype)));
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_DTYPE_DISPATCH_H_
