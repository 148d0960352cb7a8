// The CPU implementations of the Backend's optimizer kernels (SgdUpdate,
// AdamUpdate, AbsPowerSum, ScaleClamp); contracts in kindling/tensor/backend.h.
//
// Each is one pass over contiguous memory, split across the kernels' threads by
// ParallelFor, with the per-tensor branches (momentum, Nesterov, weight decay,
// AMSGrad) hoisted into template parameters so the inner loop is straight-line
// code gcc vectorizes. 16-bit floats are widened to f32 per element and
// rounded back on store.
#ifndef KINDLING_BACKEND_CPU_OPTIMIZER_KERNELS_H_
#define KINDLING_BACKEND_CPU_OPTIMIZER_KERNELS_H_

#include "kindling/tensor/backend.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

void SgdUpdateKernel(const TensorBase& param, const TensorBase& grad,
                     const TensorBase& momentum_buffer,
                     const Backend::SgdUpdateScalars& scalars);

void AdamUpdateKernel(const TensorBase& param, const TensorBase& grad,
                      const TensorBase& exp_avg, const TensorBase& exp_avg_sq,
                      const TensorBase& max_exp_avg_sq,
                      const Backend::AdamUpdateScalars& scalars);

double AbsPowerSumKernel(const TensorBase& in, double p);

void ScaleClampKernel(const TensorBase& inout, double scale, double max_abs);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_OPTIMIZER_KERNELS_H_
