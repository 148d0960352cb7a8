// The CPU random kernels behind CpuBackend::FillRandom and CpuBackend::Dropout
// (contracts in kindling/tensor/backend.h, the stream in kindling/tensor/
// philox.h). Philox is computed 32 blocks at a time in structure-of-arrays
// form so the rounds compile to vector multiplies, and work is split over
// threads by whole blocks, so the values never depend on the thread count.
#ifndef KINDLING_BACKEND_CPU_RANDOM_H_
#define KINDLING_BACKEND_CPU_RANDOM_H_

#include <cstdint>

#include "kindling/tensor/random_distribution.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::cpu {

void FillRandomKernel(const TensorBase& out, RandomDistribution distribution,
                      uint64_t seed, uint64_t offset, double a, double b);

void DropoutKernel(const TensorBase& out, const TensorBase& in, double prob,
                   uint64_t seed, uint64_t offset);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_RANDOM_H_
