#include "kindling/io/convert.h"

#include <cstdint>
#include <cstring>

#include "kindling/io/safetensors.h"
#include "kindling/tensor/convert_span.h"
#include "kindling/tensor/dtype.h"

namespace kindling::io {
namespace {

using DT = SafetensorsDType;

bool IsFloating(DT dtype) {
  return dtype == DT::kF16 || dtype == DT::kBF16 || dtype == DT::kF32 ||
         dtype == DT::kF64;
}

bool IsInteger(DT dtype) {
  switch (dtype) {
    case DT::kBool:
    case DT::kU8:
    case DT::kI8:
    case DT::kU16:
    case DT::kI16:
    case DT::kU32:
    case DT::kI32:
    case DT::kU64:
    case DT::kI64:
      return true;
    default:
      return false;
  }
}

template <class T>
T LoadUnaligned(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}
template <class T>
void StoreUnaligned(uint8_t* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

// FloatingDType() is the tensor DType of a floating safetensors dtype, the
// format ConvertFloatSpan() takes. REQUIRES: IsFloating(dtype).
DType FloatingDType(DT dtype) {
  switch (dtype) {
    case DT::kF16:
      return DType::kF16;
    case DT::kBF16:
      return DType::kBF16;
    case DT::kF64:
      return DType::kF64;
    case DT::kF32:
    default:
      return DType::kF32;
  }
}

// Integer-family element access through int64_t (two's complement).
int64_t ReadInteger(const uint8_t* p, DT dtype) {
  switch (dtype) {
    case DT::kBool:
      return p[0] != 0;
    case DT::kU8:
      return p[0];
    case DT::kI8:
      return static_cast<int8_t>(p[0]);
    case DT::kU16:
      return LoadUnaligned<uint16_t>(p);
    case DT::kI16:
      return LoadUnaligned<int16_t>(p);
    case DT::kU32:
      return LoadUnaligned<uint32_t>(p);
    case DT::kI32:
      return LoadUnaligned<int32_t>(p);
    case DT::kU64:
      return static_cast<int64_t>(LoadUnaligned<uint64_t>(p));
    case DT::kI64:
      return LoadUnaligned<int64_t>(p);
    default:
      return 0;
  }
}

void WriteInteger(uint8_t* p, DT dtype, int64_t value) {
  switch (dtype) {
    case DT::kBool:
      p[0] = value != 0;
      return;
    case DT::kU8:
    case DT::kI8:
      p[0] = static_cast<uint8_t>(value);
      return;
    case DT::kU16:
    case DT::kI16:
      return StoreUnaligned(p, static_cast<uint16_t>(value));
    case DT::kU32:
    case DT::kI32:
      return StoreUnaligned(p, static_cast<uint32_t>(value));
    case DT::kU64:
    case DT::kI64:
      return StoreUnaligned(p, static_cast<uint64_t>(value));
    default:
      return;
  }
}

}  // namespace

bool CanConvert(SafetensorsDType from, SafetensorsDType to) {
  if (from == to) return true;
  return (IsFloating(from) && IsFloating(to)) ||
         (IsInteger(from) && IsInteger(to));
}

void ConvertElements(const void* src, SafetensorsDType from, void* dst,
                     SafetensorsDType to, size_t count) {
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  // BOOL bytes other than 0 and 1 are legal on disk but not as a C++ bool, so
  // BOOL always goes through the integer loop below, which maps them with
  // `!= 0`.
  if (from == to && from != DT::kBool) {
    std::memcpy(out, in, count * SafetensorsDTypeSize(from));
    return;
  }
  // Floating types share the CPU backend's conversion, so a checkpoint
  // converted on load or save has the bits Tensor::to would give.
  if (IsFloating(from)) {
    ConvertFloatSpan(out, FloatingDType(to), in, FloatingDType(from), count);
    return;
  }
  const size_t in_size = SafetensorsDTypeSize(from);
  const size_t out_size = SafetensorsDTypeSize(to);
  for (size_t i = 0; i < count; ++i) {
    WriteInteger(out + i * out_size, to, ReadInteger(in + i * in_size, from));
  }
}

}  // namespace kindling::io
