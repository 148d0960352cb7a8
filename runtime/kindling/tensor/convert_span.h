// ConvertFloatSpan: the one conversion of a contiguous run of floating
// elements (f16, bf16, f32, f64) from one format to another.
//
// The CPU backend's contiguous copy (Tensor::to) and the checkpoint reader and
// writer (kindling/io/convert.h) both call it, so a tensor converted in
// memory and one converted on its way to or from a file get the same bits.
// The result equals the scalar reference in half.h element for element:
//   * narrowing rounds to nearest, ties to even, once (f64 -> f16/bf16 goes
//     through DoubleToFloatRoundToOdd, like DoubleToHalfBits);
//   * infinities stay infinities; values beyond a format's range round to
//     infinity by the IEEE rules (65520 -> f16 +inf);
//   * a NaN stays a NaN: quieted, sign and top payload bits kept;
//   * widening is exact.
// f16 <-> f32 uses the F16C instructions and bf16 <-> f32 AVX2 integer code
// when the build targets them (x86-64-v3 does); other builds, and the tails
// shorter than a vector, run the scalar reference. The loops are memory
// bound: f16 -> f32 into a cache-cold buffer runs at about the speed of a
// memcpy of the output (benches/load_bench), so AVX-512, which would need
// run-time dispatch in an x86-64-v3 build, is not used.
//
//   std::vector<uint16_t> halves(n);
//   kindling::ConvertFloatSpan(halves.data(), kindling::DType::kF16,
//                              floats.data(), kindling::DType::kF32, n);
#ifndef KINDLING_TENSOR_CONVERT_SPAN_H_
#define KINDLING_TENSOR_CONVERT_SPAN_H_

#include <cstddef>

#include "kindling/tensor/dtype.h"

namespace kindling {

// ConvertFloatSpan() writes `count` elements of `out_dtype` at `out`, each the
// conversion of the element of `in_dtype` at the same index of `in`.
// Neither pointer needs any alignment (checkpoint bytes may sit at any
// offset of a mapped file).
//
// REQUIRES: IsFloatingDType(out_dtype) and IsFloatingDType(in_dtype); the
// two ranges do not overlap. A non-floating dtype aborts naming both.
void ConvertFloatSpan(void* out, DType out_dtype, const void* in,
                      DType in_dtype, size_t count);

}  // namespace kindling

#endif  // KINDLING_TENSOR_CONVERT_SPAN_H_
