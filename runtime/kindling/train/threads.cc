#include "kindling/train/threads.h"

#include <cblas.h>
#include <omp.h>

namespace kindling::train {

void SetCpuThreads(int threads) {
  if (threads <= 0) return;
  omp_set_num_threads(threads);
  // OpenBLAS (the pthread build) keeps a pool of its own, one thread per
  // core by default, whose threads spin between calls: two data-parallel
  // ranks of one thread each would otherwise run four spinning GEMM threads
  // on two cores.
  openblas_set_num_threads(threads);
}

int CpuThreads() { return omp_get_max_threads(); }

}  // namespace kindling::train
