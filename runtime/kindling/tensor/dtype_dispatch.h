// DispatchDType(): the one dtype dispatcher of every backend. It calls a
// templated lambda with the storage type of a run-time DType, for the dtypes
// of a compile-time set; the lambda is instantiated for those only, and any
// other dtype aborts naming the kernel and the set.
//
//   DispatchDType(t.dtype(), [&]<class T>() { Kernel<T>(...); });  // all
//   DispatchDType<kFloatingDTypes>(t.dtype(), "cpu adam",
//                                  [&]<class T>() { ... });
//   DispatchDType<kF32F64>(t.dtype(), "cuda im2col", [&]<class T>() { ... });
//
// The 16-bit floats dispatch to their storage types Half and BFloat16; a
// kernel that lists them computes in f32 and rounds on store.
#ifndef KINDLING_TENSOR_DTYPE_DISPATCH_H_
#define KINDLING_TENSOR_DTYPE_DISPATCH_H_

#include <cstdint>
#include <cstdlib>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/half.h"

namespace kindling {

// DTypeSet: a set of dtypes, one bit per DType value.
using DTypeSet = uint32_t;

constexpr DTypeSet DTypeBit(DType dtype) {
  return DTypeSet{1} << static_cast<int>(dtype);
}

inline constexpr DTypeSet kF32F64 =
    DTypeBit(DType::kF32) | DTypeBit(DType::kF64);
inline constexpr DTypeSet kFloatingDTypes =
    kF32F64 | DTypeBit(DType::kF16) | DTypeBit(DType::kBF16);
inline constexpr DTypeSet kIntegerDTypes =
    DTypeBit(DType::kI64) | DTypeBit(DType::kI32) | DTypeBit(DType::kU8);
// kArithmeticDTypes: what the CPU's arithmetic kernels implement; the front
// end computes f16 and bf16 in f32 for them.
inline constexpr DTypeSet kArithmeticDTypes = kF32F64 | kIntegerDTypes;
// kNumericDTypes: every dtype but bool.
inline constexpr DTypeSet kNumericDTypes = kFloatingDTypes | kIntegerDTypes;
inline constexpr DTypeSet kAllDTypes = kNumericDTypes | DTypeBit(DType::kBool);

// DTypeSetNames() lists a set's dtypes, e.g. "f32, f64".
inline std::string DTypeSetNames(DTypeSet set) {
  std::string names;
  for (int i = 0; i < 32; ++i) {
    if ((set & (DTypeSet{1} << i)) == 0) continue;
    if (!names.empty()) names += ", ";
    names += std::string(DTypeName(static_cast<DType>(i)));
  }
  return names;
}

// DTypeOutsideSet() aborts: `where` got a dtype outside `set`.
[[noreturn]] inline void DTypeOutsideSet(DType dtype, DTypeSet set,
                                         const char* where) {
  KINDLING_CHECK(false, "%s: no kernel for dtype %s (it takes %s)", where,
                 std::string(DTypeName(dtype)), DTypeSetNames(set));
  std::abort();
}

// DispatchDType<kSet>() calls f.template operator()<T>() for `dtype`'s
// storage type when `dtype` is in kSet, and aborts naming `where` (the
// backend and kernel, e.g. "cpu conv2d") otherwise.
template <DTypeSet kSet, class F>
decltype(auto) DispatchDType(DType dtype, const char* where, F&& f) {
  switch (dtype) {
#define KINDLING_DISPATCH_CASE(kDType, Type)               \
  case DType::kDType:                                      \
    if constexpr ((kSet & DTypeBit(DType::kDType)) != 0) { \
      return f.template operator()<Type>();                \
    }                                                      \
    break;
    KINDLING_DISPATCH_CASE(kF32, float)
    KINDLING_DISPATCH_CASE(kF16, Half)
    KINDLING_DISPATCH_CASE(kBF16, BFloat16)
    KINDLING_DISPATCH_CASE(kF64, double)
    KINDLING_DISPATCH_CASE(kI64, int64_t)
    KINDLING_DISPATCH_CASE(kI32, int32_t)
    KINDLING_DISPATCH_CASE(kU8, uint8_t)
    KINDLING_DISPATCH_CASE(kBool, bool)
#undef KINDLING_DISPATCH_CASE
  }
  DTypeOutsideSet(dtype, kSet, where);
}

// DispatchDType(dtype, f) dispatches every dtype (it cannot fail).
template <class F>
decltype(auto) DispatchDType(DType dtype, F&& f) {
  return DispatchDType<kAllDTypes>(dtype, "DispatchDType", static_cast<F&&>(f));
}

}  // namespace kindling

#endif  // KINDLING_TENSOR_DTYPE_DISPATCH_H_
