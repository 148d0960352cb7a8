// The CPU's gradient-clipping kernels (Backend::AbsPowerSum, ScaleClamp;
// contracts in kindling/tensor/backend.h): one pass over contiguous memory
// each, split across the kernels' threads by ParallelFor. 16-bit floats are
// widened per element. The f32 2-norm sums exact f64 squares in fixed lanes
// and the f64 one runs OpenBLAS's ddot, per block (why and figures in
// clip_kernels.cc); ScaleClamp has no library counterpart (BLAS scales without
// clamping), so it stays one fused loop.
#ifndef KINDLING_BACKEND_CPU_CLIP_KERNELS_H_
#define KINDLING_BACKEND_CPU_CLIP_KERNELS_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

double AbsPowerSumKernel(const TensorBase& in, double p);

void ScaleClampKernel(const TensorBase& inout, double scale, double max_abs);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_CLIP_KERNELS_H_
