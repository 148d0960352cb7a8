// Creation ops on TensorBase: tensors made from a value or a range rather
// than from operands. See ops.h for the conventions all ops share.
#ifndef KINDLING_TENSOR_CREATION_OPS_H_
#define KINDLING_TENSOR_CREATION_OPS_H_

#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::ops {

// Full() is `shape` filled with `value` converted to `dtype`.
TensorBase Full(const Shape& shape, double value, DType dtype,
                const Device& device);
// Arange() is start, start+step, ... below end, 1-D.
TensorBase Arange(double start, double end, double step, DType dtype,
                  const Device& device);

}  // namespace kindling::ops

#endif  // KINDLING_TENSOR_CREATION_OPS_H_
