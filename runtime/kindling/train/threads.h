// SetCpuThreads(): how many OpenMP threads the CPU backend's kernels use
// (the --threads flag of the examples and benchmarks).
#ifndef KINDLING_TRAIN_THREADS_H_
#define KINDLING_TRAIN_THREADS_H_

namespace kindling::train {

// SetCpuThreads() sets the thread count for kernels started afterwards;
// threads <= 0 keeps the default (OMP_NUM_THREADS, else one per core).
void SetCpuThreads(int threads);

// CpuThreads() is the count kernels use now.
int CpuThreads();

}  // namespace kindling::train

#endif  // KINDLING_TRAIN_THREADS_H_
