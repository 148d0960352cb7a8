// DType and the tensor kinds: what an element is, at run time and at compile
// time.
//
// A Tensor<D, K> fixes its *kind* K (Float, Int or Bool) in the type, so that
// `argmax` returning indices or a comparison returning a mask is checked by the
// compiler. The exact storage format is a run-time DType: a Float tensor may
// hold f32, f16, bf16 or f64 elements, and converting between them (say for a
// bf16 checkpoint) keeps the C++ type.
//
//   kindling::DType dtype = kindling::DType::kF16;
//   kindling::DTypeSize(dtype);   // 2
//   kindling::DTypeName(dtype);   // "f16"
//   kindling::ParseDType("bf16"); // StatusOr holding DType::kBF16
#ifndef KINDLING_TENSOR_DTYPE_H_
#define KINDLING_TENSOR_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "absl/status/statusor.h"

namespace kindling {

// DType is the storage format of one element.
enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF64,
  kI64,
  kI32,
  kU8,
  kBool,
};

// Float, Int and Bool are the compile-time kinds of Tensor<D, K>. Each names
// the DType a new tensor of that kind gets when none is given.
struct Float {
  static constexpr DType kDefaultDType = DType::kF32;
};
struct Int {
  static constexpr DType kDefaultDType = DType::kI64;
};
struct Bool {
  static constexpr DType kDefaultDType = DType::kBool;
};

// TensorKind is satisfied by Float, Int and Bool.
template <class K>
concept TensorKind = std::is_same_v<K, Float> || std::is_same_v<K, Int> ||
    std::is_same_v<K, Bool>;

// DTypeSize() is the size of one element in bytes.
constexpr size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

// IsFloatingDType() is true for f32, f16, bf16 and f64.
constexpr bool IsFloatingDType(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 ||
         dtype == DType::kBF16 || dtype == DType::kF64;
}

// IsIntegerDType() is true for i64, i32 and u8.
constexpr bool IsIntegerDType(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kU8;
}

// DTypeMatchesKind() is true when a tensor of kind K may hold `dtype`.
template <TensorKind K>
constexpr bool DTypeMatchesKind(DType dtype) {
  if constexpr (std::is_same_v<K, Float>) return IsFloatingDType(dtype);
  if constexpr (std::is_same_v<K, Int>) return IsIntegerDType(dtype);
  return dtype == DType::kBool;
}

// DTypeName() is the short lowercase name: "f32", "bf16", "bool", ...
std::string_view DTypeName(DType dtype);

// ParseDType() reads a name DTypeName() writes; anything else is
// InvalidArgument.
[[nodiscard]] absl::StatusOr<DType> ParseDType(std::string_view name);

std::ostream& operator<<(std::ostream& os, DType dtype);

// DTypeOf<T> is the DType of a host element type: float, double, int64_t,
// int32_t, uint8_t or bool. (f16 and bf16 have no host type; use Half and
// BFloat16 from half.h.)
template <class T>
struct DTypeOfHost;
template <>
struct DTypeOfHost<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOfHost<double> {
  static constexpr DType value = DType::kF64;
};
template <>
struct DTypeOfHost<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOfHost<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOfHost<uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOfHost<bool> {
  static constexpr DType value = DType::kBool;
};
template <class T>
inline constexpr DType DTypeOf = DTypeOfHost<T>::value;

}  // namespace kindling

#endif  // KINDLING_TENSOR_DTYPE_H_
