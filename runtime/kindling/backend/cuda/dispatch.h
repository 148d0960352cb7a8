// Host-side dtype dispatch for the CUDA kernels: DispatchDType(dtype, f) calls
// f.template operator()<T>() with the storage type of `dtype` (Half and
// BFloat16 for the 16-bit floats); the narrower dispatchers abort naming the
// op and dtype, as the CPU backend does (backend/cpu/element.h).
#ifndef KINDLING_BACKEND_CUDA_DISPATCH_H_
#define KINDLING_BACKEND_CUDA_DISPATCH_H_

#include <cstdint>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/half.h"

namespace kindling::cuda {

template <class F>
void DispatchDType(DType dtype, F&& f) {
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
  KINDLING_CHECK(false, "cuda: unknown dtype %d", static_cast<int>(dtype));
}

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

// DispatchFloating(): f32, f64, f16, bf16.
template <class F>
void DispatchFloating(DType dtype, const char* op, F&& f) {
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
  KINDLING_CHECK(false,
                 "cuda %s: dtype %s is not floating (f32, f64, f16, bf16)", op,
                 std::string(DTypeName(dtype)));
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
