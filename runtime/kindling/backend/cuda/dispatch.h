// Host-side dispatch for the CUDA kernels by element size. Dispatch by dtype
// is kindling::DispatchDType (kindling/tensor/dtype_dispatch.h), which every
// backend shares; this header re-exports it for the .cu files.
#ifndef KINDLING_BACKEND_CUDA_DISPATCH_H_
#define KINDLING_BACKEND_CUDA_DISPATCH_H_

#include <cstdint>
#include <string>
#include <utility>

#include "kindling/core/check.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/dtype_dispatch.h"
#include "kindling/tensor/half.h"

namespace kindling::cuda {

// DispatchBySize(): an unsigned integer type as wide as one element, for
// kernels that move elements without looking at them.
template <class F>
void DispatchBySize(size_t element_size, F&& f) {
  switch (element_size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      break;
  }
  KINDLING_CHECK(false, "cuda: element size %d",
                 static_cast<int>(element_size));
}

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_DISPATCH_H_
