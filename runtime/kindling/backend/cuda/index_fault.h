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
// taken. `op` is 0 while there is none, kIndexFaultClaimed while its writer
// is filling in `value` and `bound`, then the op name's address. The writer
// publishes `op` last and the host clears it last, so a reader that sees a
// name also sees that fault's numbers.
struct IndexFault {
  unsigned long long op;  // 0, kIndexFaultClaimed, or the op name's address
  int64_t value;          // the offending index
  int64_t bound;          // the valid range is [0, bound)
};

// kIndexFaultClaimed: `op` while a writer owns the record (no string
// literal lives at address 1).
inline constexpr unsigned long long kIndexFaultClaimed = 1;

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
  IndexFault* record = sink.record;
#if defined(__CUDA_ARCH__)
  // A plain read first: once a fault is held, the many threads that meet
  // the same bad indices skip the atomic over PCIe.
  if (*static_cast<volatile unsigned long long*>(&record->op) != 0) return;
  if (atomicCAS(&record->op, 0ull, kIndexFaultClaimed) != 0ull) return;
  record->value = value;
  record->bound = bound;
  __threadfence_system();  // the numbers reach the host before the name
  atomicExch(&record->op, op);
#else
  if (record->op != 0) return;
  record->op = kIndexFaultClaimed;
  record->value = value;
  record->bound = bound;
  record->op = op;
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
// the record is empty or its writer has not published it yet (it is then
// taken by a later call). Call it after waiting for the device's work;
// callers serialize calls on one record (cuda_context.cc holds a mutex).
std::string TakeIndexFault(IndexFault& fault, const std::string& device);

}  // namespace kindling::cuda

#endif  // KINDLING_BACKEND_CUDA_INDEX_FAULT_H_
