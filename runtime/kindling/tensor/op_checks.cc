#include "kindling/tensor/op_checks.h"

#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/half.h"

namespace kindling::ops::internal {

// Half-precision tensors are computed in f32: no CPU has useful f16
// arithmetic for these ops, and rounding once at the end is more accurate.
DType ComputeDType(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 ? DType::kF32 : dtype;
}

// A backend that computes 16-bit floats natively also computes them in f32,
// inside its kernels: the result is the same rounding of the same f32 value,
// without the two conversion passes and their allocations.
DType ComputeDType(DType dtype, bool half_native) {
  return half_native ? dtype : ComputeDType(dtype);
}

DType ComputeDTypeOn(DType dtype, const Device& device) {
  if (dtype != DType::kF16 && dtype != DType::kBF16) return dtype;
  return ComputeDType(dtype, GetBackend(device).ComputesHalfNatively());
}

double ScalarAsStored(double value, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return HalfBitsToFloat(DoubleToHalfBits(value));
    case DType::kBF16:
      return BFloat16BitsToFloat(DoubleToBFloat16Bits(value));
    default:
      return value;
  }
}

void CheckDefined(const TensorBase& tensor, const char* op) {
  KINDLING_CHECK(tensor.defined(), "%s: undefined tensor", op);
}

void CheckSameDevice(const TensorBase& a, const TensorBase& b, const char* op) {
  KINDLING_CHECK(a.device() == b.device(),
                 "%s: tensors on different devices (%s %s vs %s %s)", op,
                 a.device().ToString(), a.shape().ToString(),
                 b.device().ToString(), b.shape().ToString());
}

void CheckFloating(const TensorBase& tensor, const char* op) {
  KINDLING_CHECK(IsFloatingDType(tensor.dtype()),
                 "%s: needs a floating-point tensor, got %s%s", op,
                 std::string(DTypeName(tensor.dtype())),
                 tensor.shape().ToString());
}

Shape BroadcastOrDie(const TensorBase& a, const TensorBase& b, const char* op) {
  Shape shape;
  KINDLING_CHECK(BroadcastShapes(a.shape(), b.shape(), &shape),
                 "%s: shapes %s and %s cannot be broadcast", op,
                 a.shape().ToString(), b.shape().ToString());
  return shape;
}

}  // namespace kindling::ops::internal
