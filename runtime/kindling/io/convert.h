// Element conversion between safetensors dtypes, straight from (possibly
// unaligned) file bytes into a destination buffer.
//
// Loading converts a checkpoint's dtype to the module's (an f16 file into f32
// parameters) without a staging copy, and saving converts f32 parameters to
// f16/bf16 chunk by chunk. Floating types (F16, BF16, F32, F64) convert among
// themselves with ConvertFloatSpan (kindling/tensor/convert_span.h), the
// vectorized conversion Tensor::to uses, so the bits match it and the scalar
// reference in kindling/tensor/half.h (round to nearest even); integer
// types (U8..I64, BOOL) among themselves (two's-complement wrap, nonzero ->
// true for BOOL). Float <-> integer is refused: a checkpoint that stores
// indices as floats is a mistake to report, not to paper over.
#ifndef KINDLING_IO_CONVERT_H_
#define KINDLING_IO_CONVERT_H_

#include <cstddef>

#include "kindling/io/safetensors.h"

namespace kindling::io {

// CanConvert() is true when ConvertElements() supports from -> to.
bool CanConvert(SafetensorsDType from, SafetensorsDType to);

// ConvertElements() converts `count` elements at `src` (of `from`) into `dst`
// (of `to`). Neither pointer needs any alignment. REQUIRES: CanConvert(from,
// to); the buffers do not overlap.
void ConvertElements(const void* src, SafetensorsDType from, void* dst,
                     SafetensorsDType to, size_t count);

}  // namespace kindling::io

#endif  // KINDLING_IO_CONVERT_H_
