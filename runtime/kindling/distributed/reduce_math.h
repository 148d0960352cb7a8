// The element arithmetic of a reduction, shared by the engines that take a
// reduce function (Gloo, MPI's user-defined operations for 16-bit floats):
// sum or max of two operands, and the division that turns a sum into an
// average. 16-bit floats are combined in f32 and rounded once per pair.
#ifndef KINDLING_DISTRIBUTED_REDUCE_MATH_H_
#define KINDLING_DISTRIBUTED_REDUCE_MATH_H_

#include <cstdint>

#include "kindling/tensor/dtype.h"

namespace kindling::distributed {

// CombineElements() writes out[i] = a[i] + b[i] (or max) for n elements of
// `dtype`; `out` may alias `a` or `b`. REQUIRES: IsReducibleDType(dtype).
void CombineElements(void* out, const void* a, const void* b, int64_t n,
                     DType dtype, bool max);

// DivideElements() writes out[i] = in[i] / divisor for n elements of `dtype`
// (integers truncate toward zero; f32 and 16-bit floats multiply by the
// f32 reciprocal); `out` may alias `in`. Out of place it is the copy that
// takes an all-reduced sum out of a bucket as an average, in one pass.
void DivideElements(void* out, const void* in, int64_t n, DType dtype,
                    int divisor);

// DivideInPlace() is DivideElements() from `data` into itself.
void DivideInPlace(void* data, int64_t n, DType dtype, int divisor);

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_REDUCE_MATH_H_
