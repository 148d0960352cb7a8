#include "kindling/train/threads.h"

#include <omp.h>

namespace kindling::train {

void SetCpuThreads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

int CpuThreads() { return omp_get_max_threads(); }

}  // namespace kindling::train
