#include "kindling/tensor/creation_ops.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"

namespace kindling::ops {

TensorBase Full(const Shape& shape, double value, DType dtype,
                const Device& device) {
  TensorBase result = TensorBase::Empty(shape, dtype, device);
  if (result.numel() > 0) GetBackend(device).Fill(result, value);
  return result;
}

TensorBase Arange(double start, double end, double step, DType dtype,
                  const Device& device) {
  KINDLING_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end),
                 "arange: invalid range start %g end %g step %g", start, end,
                 step);
  const double count = std::ceil((end - start) / step);
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + step * i;
  TensorBase f64 =
      TensorBase::FromHost(values.data(), Shape{n}, DType::kF64, device);
  return f64.To(dtype);
}

}  // namespace kindling::ops
