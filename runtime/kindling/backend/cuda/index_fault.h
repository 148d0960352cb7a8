// IndexFault: how a CUDA kernel reports an out-of-range index without the
// host waiting for it.
//
// Checking indices on the host before a gather would need their values: a
// device-to-host copy and a synchronization on every embedding lookup and
// every cross-entropy (one_hot). Instead the kernels check each index as they
// use it. The first bad index a device meets is written to that device's
// IndexFault record, which lives in pinned host memory mapped into the
// device; the kernel then writes 0 for that element rather than reading out
// of bounds. The host reads the record where it waits for the device anyway
// (Synchronize, a copy to host memory) and reports it there: a Status from
// Synchronize(), an abort naming the op, the index and the range from a copy.
//
// The record holds the op's name as the address of a string literal (a
// `const char*` with static storage, passed to the kernel by value), so the
// device needs no table of names. These functions compile for host and
// device; on the host they are unit-tested against a plain struct
// (tests/backend/cuda/index_fault_test.cc).
#ifndef KINDLING_BACKEND_CUDA_INDEX_FAULT_H_
#define KINDLING_BACKEND_CUDA_INDEX_FAULT_H_

#include <cstdint>
#include <string>

#include "kindling/tensor/philox.h"  // KINDLING_HOST_DEVICE

namespace kindling::cuda {

// IndexFault: the first out-of-range index seen since the record was last
// taken. `op` is 0 while there is none.
struct IndexFault {
  unsigned long long op;  // the op name's address (a string literal)
  int64_t value;          // the offending index
  int64_t bound;          // the valid range is [0, bound)
};

// IndexFaultSink: what a kernel needs to check indices: the device's record
// and the op's name.
struct IndexFaultSink {
  IndexFault* record;
  const char* op;
};

// IndexInRange() is true when 0 <= value < bound.
KINDLING_HOST_DEVICE inline bool IndexInRange(int64_t value, int64_t bound) {
  return value >= 0 && value < bound;
}

// ReportIndexFault() records `value` unless an earlier fault holds the
// record (the first one wins: later ones are usually its consequences).
KINDLING_HOST_DEVICE inline void ReportIndexFault(const IndexFaultSink& sink,
                                                  int64_t value,
                                                  int64_t bound) {
  const unsigned long long op =
      static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(sink.op));
#if defined(__CUDA_ARCH__)
  if (atomicCAS(&sink.record->op, 0ull, op) != 0ull) return;
  sink.record->value = value;
  sink.record->bound = bound;
  __threadfence_system();  // visible to the host once the kernel ends
#else
  if (sink.record->op != 0) return;
  sink.record->op = op;
  sink.record->value = value;
  sink.record->bound = bound;
#endif
}

// CheckedIndex() is `value` when in range; otherwise it reports the fault
// and returns -1, which the caller treats as "write 0, read nothing".
KINDLING_HOST_DEVICE inline int64_t CheckedIndex(const IndexFaultSink& sink,
                                                 int64_t value, int64_t bound) {
  if (IndexInRange(value, bound)) return value;
  ReportIndexFault(sink, value, bound);
  return -1;
}

// DescribeIndexFault() is the message for a non-empty record: "<op>: index
// <value> out of range [0, <bound>) on <device>".
std::string DescribeIndexFault(const IndexFault& fault,
                               const std::string& device);

// TakeIndexFault() returns the record's message and clears it, or "" when
// the record is empty. Call it only once the device's kernels have finished.
std::string TakeIndexFault(IndexFault& fault, const std::string& device);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_INDEX_FAULT_H_
