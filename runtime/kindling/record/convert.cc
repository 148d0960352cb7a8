#include "kindling/record/convert.h"

#include <cstdint>
#include <cstring>

#include "kindling/record/safetensors.h"
#include "kindling/tensor/half.h"

namespace kindling::record {
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

// Float-family element access through float (exact for F16/BF16/F32) or
// double (F64).
struct F16Io {
  static constexpr size_t kSize = 2;
  static float Read(const uint8_t* p) {
    return HalfBitsToFloat(LoadUnaligned<uint16_t>(p));
  }
  static void Write(uint8_t* p, float v) {
    StoreUnaligned(p, FloatToHalfBits(v));
  }
  static void Write(uint8_t* p, double v) {
    StoreUnaligned(p, DoubleToHalfBits(v));
  }
};
struct BF16Io {
  static constexpr size_t kSize = 2;
  static float Read(const uint8_t* p) {
    return BFloat16BitsToFloat(LoadUnaligned<uint16_t>(p));
  }
  static void Write(uint8_t* p, float v) {
    StoreUnaligned(p, FloatToBFloat16Bits(v));
  }
  static void Write(uint8_t* p, double v) {
    StoreUnaligned(p, DoubleToBFloat16Bits(v));
  }
};
struct F32Io {
  static constexpr size_t kSize = 4;
  static float Read(const uint8_t* p) { return LoadUnaligned<float>(p); }
  static void Write(uint8_t* p, float v) { StoreUnaligned(p, v); }
  static void Write(uint8_t* p, double v) {
    StoreUnaligned(p, static_cast<float>(v));
  }
};
struct F64Io {
  static constexpr size_t kSize = 8;
  static double Read(const uint8_t* p) { return LoadUnaligned<double>(p); }
  static void Write(uint8_t* p, float v) {
    StoreUnaligned(p, static_cast<double>(v));
  }
  static void Write(uint8_t* p, double v) { StoreUnaligned(p, v); }
};

template <class From, class To>
void ConvertLoop(const uint8_t* src, uint8_t* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    To::Write(dst + i * To::kSize, From::Read(src + i * From::kSize));
  }
}

template <class From>
void ConvertFloatTo(const uint8_t* src, uint8_t* dst, DT to, size_t count) {
  switch (to) {
    case DT::kF16:
      return ConvertLoop<From, F16Io>(src, dst, count);
    case DT::kBF16:
      return ConvertLoop<From, BF16Io>(src, dst, count);
    case DT::kF32:
      return ConvertLoop<From, F32Io>(src, dst, count);
    case DT::kF64:
      return ConvertLoop<From, F64Io>(src, dst, count);
    default:
      return;
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
  switch (from) {
    case DT::kF16:
      return ConvertFloatTo<F16Io>(in, out, to, count);
    case DT::kBF16:
      return ConvertFloatTo<BF16Io>(in, out, to, count);
    case DT::kF32:
      return ConvertFloatTo<F32Io>(in, out, to, count);
    case DT::kF64:
      return ConvertFloatTo<F64Io>(in, out, to, count);
    default:
      break;
  }
  const size_t in_size = SafetensorsDTypeSize(from);
  const size_t out_size = SafetensorsDTypeSize(to);
  for (size_t i = 0; i < count; ++i) {
    WriteInteger(out + i * out_size, to, ReadInteger(in + i * in_size, from));
  }
}

}  // namespace kindling::record
