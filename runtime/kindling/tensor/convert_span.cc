#include "kindling/tensor/convert_span.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/half.h"

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace kindling {
namespace {

// Elements are read and written through memcpy (one mov after optimization)
// because neither span need be aligned.
template <class T>
T LoadElement(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}
template <class T>
void StoreElement(char* p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

// --- 16-bit formats <-> f32: one vector body each, the scalar reference for
// the tail. Spans: out[count], in[count], element sizes from the names.

// VCVTPH2PS widens exactly except that it quiets a signalling NaN; the
// reference (HalfBitsToFloat) keeps every bit, as bf16 widening does, so the
// quiet bit the instruction set on those lanes is cleared again.
void HalfToFloat(char* out, const char* in, size_t count) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7fff);
  const __m256i infinity = _mm256_set1_epi32(0x7c00);
  const __m256i half_quiet_bit = _mm256_set1_epi32(0x0200);
  const __m256i float_quiet_bit = _mm256_set1_epi32(0x00400000);
  for (; i + 8 <= count; i += 8) {
    const __m128i halves =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
    const __m256i floats = _mm256_castps_si256(_mm256_cvtph_ps(halves));
    const __m256i widened = _mm256_cvtepu16_epi32(halves);
    const __m256i is_nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(widened, magnitude_mask), infinity);
    const __m256i is_quiet = _mm256_cmpeq_epi32(
        _mm256_and_si256(widened, half_quiet_bit), half_quiet_bit);
    const __m256i is_signalling = _mm256_andnot_si256(is_quiet, is_nan);
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out + 4 * i),
        _mm256_xor_si256(floats,
                         _mm256_and_si256(is_signalling, float_quiet_bit)));
  }
#endif
  for (; i < count; ++i) {
    StoreElement(out + 4 * i,
                 HalfBitsToFloat(LoadElement<uint16_t>(in + 2 * i)));
  }
}

// VCVTPS2PH with an immediate rounding mode rounds to nearest even whatever
// MXCSR's rounding field says, and quiets a NaN by setting the top mantissa
// bit and keeping the next nine: FloatToHalfBits exactly
// (tests/tensor/convert_span_test.cc checks this bit for bit).
void FloatToHalf(char* out, const char* in, size_t count) {
  size_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= count; i += 8) {
    const __m256 floats =
        _mm256_loadu_ps(reinterpret_cast<const float*>(in + 4 * i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(floats, _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < count; ++i) {
    StoreElement(out + 2 * i, FloatToHalfBits(LoadElement<float>(in + 4 * i)));
  }
}

// A bfloat16 is the top half of a float, so widening is a 16-bit shift.
void BFloat16ToFloat(char* out, const char* in, size_t count) {
  size_t i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= count; i += 8) {
    const __m256i widened = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 * i),
                        _mm256_slli_epi32(widened, 16));
  }
#endif
  for (; i < count; ++i) {
    StoreElement(out + 4 * i,
                 BFloat16BitsToFloat(LoadElement<uint16_t>(in + 2 * i)));
  }
}

// FloatToBFloat16Bits() on eight lanes: add 0x7fff plus the lowest kept bit
// (round to nearest even; carries into the exponent round up to infinity),
// except that a NaN keeps its top bits with the quiet bit set.
void FloatToBFloat16(char* out, const char* in, size_t count) {
  size_t i = 0;
#if defined(__AVX2__)
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i infinity = _mm256_set1_epi32(0x7f800000);
  const __m256i round_base = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i quiet_bit = _mm256_set1_epi32(0x0040);
  for (; i + 8 <= count; i += 8) {
    const __m256i bits =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i));
    const __m256i top = _mm256_srli_epi32(bits, 16);
    const __m256i rounding =
        _mm256_add_epi32(round_base, _mm256_and_si256(top, one));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(bits, rounding), 16);
    // Both sides are non-negative, so the signed compare is the unsigned one.
    const __m256i is_nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(bits, magnitude_mask), infinity);
    const __m256i quiet_nan = _mm256_or_si256(top, quiet_bit);
    const __m256i result = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // Every lane is <= 0xffff, so the saturating pack is exact; it packs per
    // 128-bit half, and the permute gathers the two halves' results.
    const __m256i packed =
        _mm256_permute4x64_epi64(_mm256_packus_epi32(result, result), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_castsi256_si128(packed));
  }
#endif
  for (; i < count; ++i) {
    StoreElement(out + 2 * i,
                 FloatToBFloat16Bits(LoadElement<float>(in + 4 * i)));
  }
}

// --- f64 <-> f32: plain loops gcc vectorizes.

void FloatToDouble(char* out, const char* in, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    StoreElement(out + 8 * i,
                 static_cast<double>(LoadElement<float>(in + 4 * i)));
  }
}

void DoubleToFloat(char* out, const char* in, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    StoreElement(out + 4 * i,
                 static_cast<float>(LoadElement<double>(in + 8 * i)));
  }
}

// DoubleToFloatRoundToOddSpan() narrows f64 for a second rounding to a 16-bit
// format; the two together equal DoubleToHalfBits / DoubleToBFloat16Bits.
void DoubleToFloatRoundToOddSpan(char* out, const char* in, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    StoreElement(out + 4 * i,
                 DoubleToFloatRoundToOdd(LoadElement<double>(in + 8 * i)));
  }
}

// --- Everything else goes through an f32 staging chunk that stays in L1.

using SpanConversion = void (*)(char* out, const char* in, size_t count);

// ToFloat() is the conversion of `dtype` to f32 (exact widening for 16-bit
// sources). For f64 it is the round-to-odd narrowing when the final target
// is a 16-bit format (`to_16_bit`), so that the value is rounded once.
SpanConversion ToFloat(DType dtype, bool to_16_bit) {
  switch (dtype) {
    case DType::kF16:
      return HalfToFloat;
    case DType::kBF16:
      return BFloat16ToFloat;
    case DType::kF64:
      return to_16_bit ? DoubleToFloatRoundToOddSpan : DoubleToFloat;
    default:
      return nullptr;  // f32 needs no staging
  }
}

SpanConversion FromFloat(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return FloatToHalf;
    case DType::kBF16:
      return FloatToBFloat16;
    case DType::kF64:
      return FloatToDouble;
    default:
      return nullptr;
  }
}

}  // namespace

void ConvertFloatSpan(void* out, DType out_dtype, const void* in,
                      DType in_dtype, size_t count) {
  KINDLING_CHECK(IsFloatingDType(out_dtype) && IsFloatingDType(in_dtype),
                 "ConvertFloatSpan: %s -> %s is not a floating conversion",
                 std::string(DTypeName(in_dtype)),
                 std::string(DTypeName(out_dtype)));
  char* out_bytes = static_cast<char*>(out);
  const char* in_bytes = static_cast<const char*>(in);
  if (out_dtype == in_dtype) {
    std::memcpy(out_bytes, in_bytes, count * DTypeSize(in_dtype));
    return;
  }
  const bool to_16_bit = DTypeSize(out_dtype) == 2;
  const SpanConversion widen = ToFloat(in_dtype, to_16_bit);
  const SpanConversion narrow = FromFloat(out_dtype);
  if (widen == nullptr) return narrow(out_bytes, in_bytes, count);
  if (narrow == nullptr) return widen(out_bytes, in_bytes, count);
  // Two steps (f16 <-> bf16, 16-bit <-> f64) chunk by chunk.
  constexpr size_t kChunk = 1024;
  alignas(64) float staging[kChunk];
  char* staging_bytes = reinterpret_cast<char*>(staging);
  const size_t in_size = DTypeSize(in_dtype);
  const size_t out_size = DTypeSize(out_dtype);
  for (size_t begin = 0; begin < count; begin += kChunk) {
    const size_t n = std::min(kChunk, count - begin);
    widen(staging_bytes, in_bytes + begin * in_size, n);
    narrow(out_bytes + begin * out_size, staging_bytes, n);
  }
}

}  // namespace kindling
